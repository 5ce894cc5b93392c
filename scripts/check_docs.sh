#!/usr/bin/env bash
# Every relative link of the Markdown documents (README.md, docs/, benches/,
# tests/) names a file or folder of the repository. Exit status 1 and the
# broken links when one does not.
set -u
cd "$(dirname "$0")/.."
bad=0
while IFS= read -r doc; do
    dir=$(dirname "$doc")
    # [text](target) with a relative target; the #anchor is dropped.
    grep -o '\](\([^)#: ]*\)\(#[^)]*\)\?)' "$doc" | sed 's/^](\([^)#]*\).*/\1/' |
        while IFS= read -r target; do
            [ -z "$target" ] && continue
            if [ ! -e "$dir/$target" ]; then
                echo "$doc: broken link: $target"
                exit 1
            fi
        done || bad=1
done < <(find README.md docs benches tests -name '*.md' -not -path '*/node_modules/*')
exit $bad
