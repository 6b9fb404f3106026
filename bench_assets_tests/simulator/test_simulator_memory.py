"""What the simulator keeps for its life: each planted page once (its memory at a 12,600-row
snapshot's corpus is in benchmarks/README.md, "Scale")."""

from __future__ import annotations

import json
import subprocess
import sys

# A fresh interpreter: the test process's own corpora (other tests, other sizes) would count too.
COUNT_PAGES = """
import gc, json
from bench_assets.golden.planted import Page
from bench_assets.simulator.app import create_simulator
sim = create_simulator(pages_per_stratum=30, latency_scale=0.0)
gc.collect()
served = {id(p) for p in sim.corpus.pages.values()}
served |= {id(f) for p in sim.corpus.pages.values() for f in p.fabrications}
# the registries' pages are the registry site's own (`simulator.registry_site`)
alive = [o for o in gc.get_objects() if isinstance(o, Page) and o.stratum != "registry"]
print(json.dumps({"alive": len(alive), "served": len(served), "others": sum(id(o) not in served for o in alive)}))
"""


def test_the_simulator_keeps_each_planted_page_once():
    """Drawing the corpus draws the streams its reserve pages avoid too (as many pages again); the
    simulator used to keep them all, its largest part after the corpus itself."""
    done = subprocess.run([sys.executable, "-c", COUNT_PAGES], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    counted = json.loads(done.stdout)
    assert counted["others"] == 0 and counted["alive"] == counted["served"], counted
