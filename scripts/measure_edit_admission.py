"""How many designed environments the quickstart's design stage admits, per iteration.

Runs only the design stage of a self-play preset (default ``quickstart``) with its real
model (the embedded SmolLM2-135M-Instruct), its real designer settings, the real games
seed pool in a fresh SQLite store and the real validation pipeline in the sandbox, for
``--iterations`` design rounds (the preset's skills, round-robin, and its designs per skill)
over each of ``--seeds`` — without the rollouts and updates between them, so the
policy's weights stay those of the start (the first iterations of a run) and no stats
are recorded (edit parents are drawn from the unmeasured frontier).

    python scripts/measure_edit_admission.py                       # 3 seeds x 2 iterations
    python scripts/measure_edit_admission.py --set designer.edit.share=0.0   # writing only
    python scripts/measure_edit_admission.py --seeds-at 41db6ce   # the seed pool of a commit

``--seeds-at REV`` stores each seed's source as it was at git revision ``REV`` of the
checkout the seed files live in (to compare seed pools, e.g. before and after knobs were
declared; everything else is the current code).

Prints one line per (seed, iteration) and the mean of admitted designed environments
per iteration; ``--json PATH`` writes every line.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--preset", default="quickstart")
    ap.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    ap.add_argument("--iterations", type=int, default=2)
    ap.add_argument("--set", dest="overrides", action="append", default=[],
                    help="a preset override, as for spade selfplay --set (e.g. designer.edit.share=0.5)")
    ap.add_argument("--json", type=Path, default=None)
    ap.add_argument("--seeds-at", metavar="REV", default=None,
                    help="store the seed sources as of this git revision instead of the installed files")
    args = ap.parse_args(argv)

    from spade_core.config import load_config
    from spade_core.metadata import EnvMetadata, EnvStatus
    from spade_core.plugins import get_plugins
    from spade_core.store import EnvStore
    from spade_designer.assembly import assemble_designer
    from spade_trainer.chat_backend import PolicyChatBackend
    from spade_trainer.config import load_selfplay_config
    from spade_trainer.designer_stage import DesignerStage, designer_config_of
    from spade_trainer.edit_stage import OperatorDesignStage
    from spade_trainer.models import load_policy
    from spade_trainer.policy import TransformersPolicy
    from spade_trainer.ranks import collection_seed
    from spade_trainer.threads import apply_threads

    cfg = load_selfplay_config(preset=args.preset, overrides=args.overrides)
    plugins = get_plugins()
    domain = plugins.domain(cfg.domain)
    skills = list(cfg.skills or domain.skills)
    apply_threads(cfg.model.threads)
    t0 = time.perf_counter()
    model, tokenizer = load_policy(cfg.model)
    print(f"model loaded in {time.perf_counter() - t0:.0f} s", flush=True)
    policy = TransformersPolicy(model, tokenizer)
    backend = PolicyChatBackend(policy, tokenizer, name="policy", model_name=cfg.model.source)
    dcfg = designer_config_of(cfg)
    from spade_designer.operators import OperatorMix

    lines: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory() as tmp:
        for seed in args.seeds:
            store = EnvStore(f"sqlite:///{Path(tmp) / f'store-{seed}.db'}")
            for s in domain.seed_envs:
                meta = EnvMetadata(name=s.name, version=s.version, domain=domain.name, skill=s.skill,
                                   description=s.description, difficulty=s.difficulty, max_turns=s.max_turns,
                                   action_format=domain.action_format, class_name=s.class_name, tags=["seed"])
                store.add(_seed_source(s.path, args.seeds_at), meta)
                store.set_status(s.id, EnvStatus.admitted)
            designer = assemble_designer(load_config(), dcfg, store=store, plugins=plugins, backend=backend)
            stage: Any = DesignerStage(designer, cfg.domain)
            if dcfg.edit.share > 0 or dcfg.edit.mix == "bandit":
                stage = OperatorDesignStage(stage, OperatorMix.from_settings(dcfg.edit))
            for it in range(1, args.iterations + 1):
                k = min(cfg.skills_per_iteration, len(skills))
                start = ((it - 1) * k) % len(skills)
                cseed = collection_seed(cfg.seed + seed, it)
                t1 = time.perf_counter()
                cands = []
                for j in range(k):
                    skill = skills[(start + j) % len(skills)]
                    apply_threads(cfg.model.threads)
                    cands.extend(stage.design(skill, cfg.designs_per_skill, seed=cseed * 31 + j))
                line = {
                    "seed": seed, "iteration": it, "designed": len(cands),
                    "admitted": sum(c.admitted for c in cands),
                    "operators": [c.operator for c in cands],
                    "rejected_at": [c.failed_stage for c in cands if not c.admitted],
                    "reasons": [c.reasons[0][:160] if c.reasons else "" for c in cands if not c.admitted],
                    "admitted_ids": [c.env_id for c in cands if c.admitted],
                    "seconds": round(time.perf_counter() - t1, 1),
                }
                lines.append(line)
                print(json.dumps(line), flush=True)
            stage.close()
            store.close()
    per_iteration = [ln["admitted"] for ln in lines]
    designed = sum(ln["designed"] for ln in lines)
    mean = sum(per_iteration) / len(per_iteration)
    share = sum(per_iteration) / designed if designed else 0.0
    print(f"admitted per iteration: {per_iteration}; mean {mean:.2f} over {len(args.seeds)} seeds x "
          f"{args.iterations} iterations; admitted share {share:.0%} of {designed} designs")
    if args.json is not None:
        args.json.write_text(json.dumps({"lines": lines, "mean_admitted_per_iteration": mean,
                                         "admitted_share": share}, indent=2), encoding="utf-8")
    return 0


def _seed_source(path: Path, rev: str | None) -> str:
    """A seed file's text: the installed file, or its version at git revision ``rev``."""
    if rev is None:
        return path.read_text(encoding="utf-8")
    root = Path(subprocess.check_output(["git", "rev-parse", "--show-toplevel"], cwd=path.parent, text=True).strip())
    rel = path.resolve().relative_to(root.resolve()).as_posix()
    try:
        return subprocess.check_output(["git", "show", f"{rev}:{rel}"], cwd=root, text=True, stderr=subprocess.PIPE)
    except subprocess.CalledProcessError as exc:
        raise SystemExit(f"--seeds-at {rev}: cannot read {rel} at that revision: {exc.stderr.strip()}") from None


if __name__ == "__main__":
    sys.exit(main())
