//! Cross-process tests live in tests/.
