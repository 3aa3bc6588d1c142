//! What makes an answer a usable set of vectors: one per text, all of the model's one dimension,
//! every component finite, none zero; returned L2-normalised, since recall compares vectors by
//! their dot product and an endpoint need not normalise (OpenAI's models do, others do not).

use std::sync::atomic::{AtomicUsize, Ordering};

use super::EmbedError;

/// The model's dimension, learned from its first usable answer and held to after it: a vector of
/// another length could not be compared with those already stored.
#[derive(Debug, Default)]
pub struct Dimension(AtomicUsize);

impl Dimension {
    pub fn known(dimension: usize) -> Self {
        Self(AtomicUsize::new(dimension))
    }

    pub fn get(&self) -> Option<usize> {
        Some(self.0.load(Ordering::Relaxed)).filter(|d| *d > 0)
    }

    /// Checks `vectors` (the answer for `expected` texts) and normalises them in place.
    pub fn check(&self, vectors: &mut [Vec<f32>], expected: usize) -> Result<(), EmbedError> {
        let garbage = |reason: String| Err(EmbedError::Garbage { reason });
        if vectors.len() != expected {
            return garbage(format!(
                "{} embeddings for {expected} inputs",
                vectors.len()
            ));
        }
        let Some(first) = vectors.first() else {
            return Ok(());
        };
        let dimension = first.len();
        if let Some(known) = self.get()
            && known != dimension
        {
            return garbage(format!(
                "{dimension} dimensions where the model's earlier answers had {known}"
            ));
        }
        for (i, vector) in vectors.iter_mut().enumerate() {
            if vector.is_empty() {
                return garbage(format!("embedding {i} is empty"));
            }
            if vector.len() != dimension {
                return garbage(format!(
                    "embedding {i} has {} dimensions, embedding 0 has {dimension}",
                    vector.len()
                ));
            }
            if let Some(bad) = vector.iter().find(|x| !x.is_finite()) {
                return garbage(format!("embedding {i} holds {bad}"));
            }
            let norm = vector
                .iter()
                .map(|x| f64::from(*x).powi(2))
                .sum::<f64>()
                .sqrt();
            if norm == 0.0 {
                return garbage(format!("embedding {i} is all zeros"));
            }
            for x in vector.iter_mut() {
                *x = (f64::from(*x) / norm) as f32;
            }
        }
        // The first answer fixes the dimension; a concurrent first answer of another length lost
        // the race and is garbage.
        if let Err(known) =
            self.0
                .compare_exchange(0, dimension, Ordering::Relaxed, Ordering::Relaxed)
            && known != dimension
        {
            return garbage(format!(
                "{dimension} dimensions where the model's earlier answers had {known}"
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reason(result: Result<(), EmbedError>) -> String {
        match result {
            Err(EmbedError::Garbage { reason }) => reason,
            other => panic!("expected garbage, got {other:?}"),
        }
    }

    #[test]
    fn vectors_come_back_unit_length_and_fix_the_dimension() {
        let dimension = Dimension::default();
        assert_eq!(dimension.get(), None);
        let mut vectors = vec![vec![3.0, 4.0], vec![0.0, -2.0]];
        dimension.check(&mut vectors, 2).unwrap();
        assert_eq!(vectors, [vec![0.6, 0.8], vec![0.0, -1.0]]);
        assert_eq!(dimension.get(), Some(2));
        assert_eq!(
            reason(dimension.check(&mut [vec![1.0, 0.0, 0.0]], 1)),
            "3 dimensions where the model's earlier answers had 2"
        );
    }

    #[test]
    fn each_kind_of_garbage_is_named() {
        let check = |mut vectors: Vec<Vec<f32>>, expected| {
            reason(Dimension::known(2).check(&mut vectors, expected))
        };
        assert_eq!(check(vec![vec![1.0, 0.0]], 2), "1 embeddings for 2 inputs");
        assert_eq!(
            check(vec![vec![1.0, 0.0], vec![1.0]], 2),
            "embedding 1 has 1 dimensions, embedding 0 has 2"
        );
        assert_eq!(check(vec![vec![1.0, f32::NAN]], 1), "embedding 0 holds NaN");
        assert_eq!(
            check(vec![vec![1.0, 0.0], vec![f32::INFINITY, 0.0]], 2),
            "embedding 1 holds inf"
        );
        assert_eq!(check(vec![vec![0.0, 0.0]], 1), "embedding 0 is all zeros");
        assert_eq!(
            reason(Dimension::default().check(&mut [vec![]], 1)),
            "embedding 0 is empty"
        );
    }
}
