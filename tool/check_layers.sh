#!/bin/sh
# Checks the layering of src/: a file calls only the PF_PRIVATE functions of files listed before
# it in src/ORDER (the one way up is the backend operation table, a table of pointers, which this
# check does not see). Comments are left out, so a comment may name any function. Prints each
# call that goes up and exits 1 when there is one.
set -eu
cd "$(dirname "$0")/../src"
files=$(awk '!/^#/ && NF && $1 ~ /\.c$/ {print $1}' ORDER)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# each file without its comments (/* ... */ spans lines)
for f in $files; do
    sed 's|/\*.*\*/||g' "$f" | awk '
        inside { if (sub(/.*\*\//, "")) inside = 0; else next }
        { if (sub(/\/\*.*/, "")) inside = 1; print }' > "$tmp/$f"
done
status=0
earlier=""
for f in $files; do
    # the functions f defines for other files: "PF_PRIVATE <type> name(" at the start of a line,
    # a definition (not a prototype) where the line or a following one opens the body
    grep -E '^PF_PRIVATE [^;]*\(' "$tmp/$f" | grep -v ';[[:space:]]*$' |
        sed -E 's/\(.*//; s/.*[^A-Za-z0-9_]([A-Za-z_][A-Za-z0-9_]*)$/\1/' | sort -u > "$tmp/$f.defs"
    for e in $earlier; do
        if [ -s "$tmp/$f.defs" ] && grep -n -w -F -f "$tmp/$f.defs" "$tmp/$e" > "$tmp/hits"; then
            while IFS= read -r hit; do
                echo "check-layers: src/$e calls up into src/$f: line ${hit%%:*}: $(echo "${hit#*:}" | sed 's/^ *//')"
            done < "$tmp/hits"
            status=1
        fi
    done
    earlier="$earlier $f"
done
[ $status = 0 ] && echo "check-layers: each src/ file calls only files listed before it in src/ORDER"
exit $status
