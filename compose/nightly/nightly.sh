#!/usr/bin/env bash
# Nightly regression job: bring the stack up, run the arena, compare with the pinned baseline, update the
# leaderboard ($NIGHTLY_DIR/leaderboard/index.html), keep the last N runs. Exit code: 0 pass, 1 regression (see regression.md in the run), 2 error.
#
#   compose/nightly/nightly.sh [CONFIG]              (default configs/compose-smoke.yaml)
#
# Environment:
#   NIGHTLY_DIR  where runs go, under ./runs for the orchestrator container (default runs/nightly)
#   KEEP         how many dated runs to keep (default 7); the baseline is never pruned
#   THRESHOLDS   YAML of allowed worsening per metric (default: the built-in thresholds)
#   STACK        compose (default: docker-compose up, the orchestrator container), local
#                (services as local processes, .venv/bin/orchestrator) or incluster (inside the orchestrator
#                image beside the running services, e.g. deploy/k8s's CronJob: `orchestrator` on PATH)
# The first run, or any run after `rm -r $NIGHTLY_DIR/baseline`, is pinned as the baseline.
# cron (02:30 every night, from the repository root):
#   30 2 * * * cd /path/to/voxarena && compose/nightly/nightly.sh >> runs/nightly.log 2>&1
set -euo pipefail
cd "$(dirname "$0")/../.."
CONFIG=${1:-configs/compose-smoke.yaml}
NIGHTLY_DIR=${NIGHTLY_DIR:-runs/nightly}
KEEP=${KEEP:-7}
STACK=${STACK:-compose}
COMPOSE=$(command -v docker-compose >/dev/null && echo docker-compose || echo "docker compose")
mkdir -p "$NIGHTLY_DIR"
stamp=$(date -u +%Y%m%dT%H%M%SZ)
run="$NIGHTLY_DIR/$stamp"
baseline="$NIGHTLY_DIR/baseline"

orchestrator() {
  case $STACK in
    compose) $COMPOSE run --rm -T orchestrator "$@" ;;
    incluster) command orchestrator "$@" ;;
    *) .venv/bin/orchestrator "$@" ;;
  esac
}

if [ "$STACK" = compose ]; then
  $COMPOSE up -d >/dev/null
fi
echo "nightly $stamp: running $CONFIG into $run ($STACK)"
# An incomplete run (exit 3: a rerun has work, 4: permanent failures) is not compared with the baseline.
run_rc=0
# In the cluster the services are reached by name, as the compose stack's are.
orchestrator run "$CONFIG" --out "$run" --no-progress --stack "${STACK/incluster/compose}" || run_rc=$?
case $run_rc in
  0) ;;
  3|4) echo "run incomplete (exit $run_rc): see orchestrator status $run"; exit 2 ;;
  *) echo "run failed (exit $run_rc)"; exit 2 ;;
esac
orchestrator status "$run" >/dev/null || { echo "run incomplete: see orchestrator status $run"; exit 2; }

rc=0
if [ ! -d "$baseline" ]; then
  cp -r "$run" "$baseline"
  echo "no baseline yet: pinned $run as $baseline"
else
  args=(compare "$baseline" "$run" --markdown "$run/regression.md")
  [ -n "${THRESHOLDS:-}" ] && args+=(--thresholds "$THRESHOLDS")
  orchestrator "${args[@]}" || rc=$?
fi

# The leaderboard over every kept night (runs of another protocol are listed apart): $NIGHTLY_DIR/leaderboard.
orchestrator leaderboard "$NIGHTLY_DIR"/20*/ --out "$NIGHTLY_DIR/leaderboard" || echo "leaderboard not updated"

# Keep the newest $KEEP dated runs.
ls -1d "$NIGHTLY_DIR"/20*/ 2>/dev/null | sort | head -n -"$KEEP" | xargs -r rm -rf
echo "nightly $stamp: exit $rc"
exit $rc
