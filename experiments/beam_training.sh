#!/bin/bash
# Issue 41's fair experiment: train every arm of experiments/beam_training.py at equal minutes.
#
#   RUNS=runs/b41 PLAN="ud_english_ewt:10:20 ud_turkish_imst:3:6" \
#     bash experiments/beam_training.sh A & bash experiments/beam_training.sh B; wait
#
# PLAN holds data:HALF:T per treebank (minutes); slot A and slot B each run one thread, one
# training after the other, 2.5 T minutes per treebank each. Runs go to $RUNS/<data>.<arm>;
# $RUNS/queue.log says when each started and ended.
set -u
RUNS=$(realpath -m "$RUNS")
mkdir -p "$RUNS"
cd "$(dirname "$0")/.."
base() {
  echo "python train.py data=$1 trainer.threads=1 trainer.patience=null trainer.max_epochs=10000 trainer.progress_bar=false"
}
run() { # NAME OVERRIDES...: one training run into $RUNS/NAME, then NAME.done
  local name=$1
  shift
  echo "$(date +%T) start $name" >>"$RUNS/queue.log"
  "$@" hydra.run.dir="$RUNS/$name" >"$RUNS/$name.log" 2>&1
  echo "$(date +%T) end $name rc=$?" >>"$RUNS/queue.log"
  touch "$RUNS/$name.done"
}
waitfor() { while [ ! -e "$RUNS/$1.done" ]; do sleep 10; done; }
slot_a() { # DATA HALF: the local start, three beam-trained arms, the local run resumed
  local d=$1 h=$2 t
  t=$(base "$d")
  run "$d.L_half" $t model=arc_hybrid trainer.max_minutes="$h"
  for k in 16 64 4; do
    run "$d.B$k" $t model=arc_hybrid trainer.max_minutes="$h" model.beam_loss.size=$k \
      trainer.init_from="$RUNS/$d.L_half/best.pt" search=beam search.beam_size=$k
  done
  cp -r "$RUNS/$d.L_half" "$RUNS/$d.L_full"
  rm -f "$RUNS/$d.L_full/.lock"
  run "$d.L_full" $t model=arc_hybrid trainer.max_minutes="$h" trainer.resume=true
}
slot_b() { # DATA HALF T: the combined model (local, then beam), the graph parser, k = 1
  local d=$1 h=$2 T=$3 t
  t=$(base "$d")
  run "$d.C_half" $t model=combined trainer.max_minutes="$h"
  run "$d.G" $t trainer.max_minutes="$T"
  waitfor "$d.L_half"
  run "$d.B1" $t model=arc_hybrid trainer.max_minutes="$h" model.beam_loss.size=1 \
    trainer.init_from="$RUNS/$d.L_half/best.pt" search=beam search.beam_size=1
  run "$d.C_beam" $t model=combined trainer.max_minutes="$h" model.beam_loss.size=16 \
    model.beam_loss.graph_weight=0.5 trainer.init_from="$RUNS/$d.C_half/best.pt" \
    search=beam search.beam_size=16 search.graph_weight=0.5
}
for p in $PLAN; do
  IFS=: read -r d h T <<<"$p"
  if [ "$1" = A ]; then slot_a "$d" "$h"; else slot_b "$d" "$h" "$T"; fi
done
echo "$(date +%T) slot $1 finished" >>"$RUNS/queue.log"
