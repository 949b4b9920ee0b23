# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
# perf/run's chart: medians per benchmark, each normalised to siw = 1 so
# latencies and bandwidths share one axis (lower is better for us, higher
# for MB/s: the labels say which).
set terminal png size 1100,600
set output outfile
# Benchmark names contain underscores: no subscripts.
set termoption noenhanced
set style data histograms
set style histogram clustered gap 1
set style fill solid 0.8 border -1
set boxwidth 0.9
set ylabel "relative to siw (siw = 1)"
set xtics rotate by -25 scale 0
set key top left
set title "xiw vs upstream siw vs rxe, one guest (QEMU TCG)"
plot datafile using ($2/$4):xtic(1) title "xiw", \
     '' using ($3/$4) title "xiw, no CRC", \
     '' using ($4/$4) title "siw", \
     '' using ($5/$4) title "rxe"
