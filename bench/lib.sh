# Shared by the scripts in bench/ (sourced, not run).

# median X...: the median of the numbers, the mean of the middle two for an
# even count (printed in full, never in exponent form).
median() {
    printf '%s\n' "$@" | sort -g |
        awk '{ v[NR] = $1 } END { if (NR % 2) print v[(NR + 1) / 2]; else printf "%.12g\n", (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}
