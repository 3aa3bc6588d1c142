#!/usr/bin/env bash
# Lists every citation, in the repository's code and docs, of a document the repository does not
# hold: "document 004", "design document 000's", "doc 001", "ADR-017", "seed 003" (a design
# document, not `--seed 7`), "issue 8". Contracts are cited by their pages under docs/contracts/
# instead (docs/contracts/README.md); scripts/citation-map.sed rewrites the known citations.
#
#   scripts/check-citations.sh        # prints file:line: text of each, then a count; exit 1 if any
#
# A citation split over two lines ("(document" at the end of one comment line, "004" opening the
# next) is found too. Exit 0 when there is none.
set -euo pipefail
cd "$(dirname "$0")/.."

# Case-insensitive extended regular expressions.
single='(^|[^-[:alnum:]])((design )?documents? [0-9]{3}|docs? [0-9]{3}|adr-[0-9]+|seeds? [0-9]{3}|issues? #?[0-9]+)([^[:alnum:]]|$)'
# The end of a line that may continue on the next one with a number.
split_head='(^|[^-[:alnum:]])((design )?documents?|docs?|issues?|seeds?)$'
split_tail='^[[:space:]]*(//[/!]?|#|--|[*])?[[:space:]]*#?[0-9]+([^[:alnum:]]|$)'

files=()
while IFS= read -r -d '' file; do
  case "$file" in
    scripts/check-citations.sh | scripts/citation-map.sed) continue ;;
  esac
  [[ -f "$file" ]] && files+=("$file")
done < <(git ls-files -z --cached --others --exclude-standard -- \
  '*.rs' '*.md' '*.sh' '*.py' '*.yml' '*.yaml' '*.html' '*.toml' '*.sql' '*.mjs')

found=$(
  {
    grep -nHiE "$single" "${files[@]}" || true
    awk -v head="$split_head" -v tail="$split_tail" '
      FNR == 1 { previous = "" }
      {
        if (tolower(previous) ~ head && $0 ~ tail) {
          printf "%s:%d: %s / %s\n", FILENAME, FNR - 1, previous, $0
        }
        previous = $0
      }' "${files[@]}"
  } | sort -t: -k1,1 -k2,2n
)

if [[ -z "$found" ]]; then
  echo "No citations of documents outside the repository (${#files[@]} files checked)."
  exit 0
fi
printf '%s\n' "$found"
count=$(printf '%s\n' "$found" | wc -l)
in_files=$(printf '%s\n' "$found" | cut -d: -f1 | sort -u | wc -l)
echo "${count} line(s) in ${in_files} file(s) cite a document the repository does not hold;"
echo "cite docs/contracts/ instead (scripts/citation-map.sed rewrites the known forms)."
exit 1
