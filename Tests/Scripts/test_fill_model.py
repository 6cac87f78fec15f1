"""scripts/fill-model: its tree is the fake's, its fill lists every entry, and its one-chain and
size-aware fills behave as the model's own rules say (the figures it prints rest on these)."""

import importlib.machinery
import importlib.util
import math
import os
import sys

import pytest

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
sys.path.insert(0, os.path.join(ROOT, "tools", "fakedropbox"))


def load_model():
    loader = importlib.machinery.SourceFileLoader("fill_model", os.path.join(ROOT, "scripts", "fill-model"))
    spec = importlib.util.spec_from_loader("fill_model", loader)
    module = importlib.util.module_from_spec(spec)
    loader.exec_module(module)
    return module


fm = load_model()


@pytest.fixture(scope="module")
def tree():
    return fm.build_tree(20000, 2000)


def test_the_tree_has_the_fakes_entries_and_sizes(tree):
    from fakedropbox.synth import build_synthetic
    from fakedropbox.tree import Tree
    fake = Tree(seed=fm.SEED)
    build_synthetic(fake, 20000, seed=fm.SEED, folders=2000, top_folders=12)
    live = [n for n in fake.nodes[1:] if n is not None]
    assert tree[0].size - 1 == len(live)
    assert sum(1 for n in live if n.children is not None) == len(tree) - 1
    assert len(tree[0].subfolders) == 12
    for folder in tree:
        # A recursive listing holds the folder, its files and its subfolders' listings.
        files = folder.children - len(folder.subfolders)
        assert folder.size == 1 + files + sum(tree[s].size for s in folder.subfolders)


def test_one_chain_takes_its_pages_one_after_another(tree):
    fill = fm.Fill(tree, 100, fm.Policy(parallelism=1), plan=[0])
    seconds, requests = fill.run()
    pages = math.ceil(tree[0].size / 100)
    assert requests == 2 + pages
    last = tree[0].size - (pages - 1) * 100
    expect = 2 * (fm.LATENCY_MS + fm.FIXED_MS) + (pages - 1) * fill.page_ms(100) + fill.page_ms(last)
    assert seconds == pytest.approx(expect / 1000)


@pytest.mark.parametrize("cap", [100, 2000])
def test_the_daemons_policy_lists_every_entry_within_the_request_target(tree, cap):
    fill = fm.Fill(tree, cap, fm.Policy())
    seconds, requests = fill.run()
    assert fill.pages >= fm.pages_needed(tree, cap)
    assert requests <= fm.target_requests(tree, cap)
    # Parallel listings beat one chain when pages are small.
    if cap == 100:
        assert fill.splits, "a 20,000-entry account in 100-entry pages splits a branch"
        assert seconds < fm.Fill(tree, cap, fm.Policy(parallelism=1), plan=[0]).run()[0] / 2


def test_a_plan_from_sizes_splits_until_no_branch_is_too_big(tree):
    plan, extra = fm.sized_plan(tree, 6)
    limit = tree[0].size / 6 * 0.7
    assert all(tree[f].size <= limit or not tree[f].subfolders for f in plan)
    assert extra > 0
    # The plan's branches cover the account: its split folders' own entries aside, every entry once.
    covered = sum(tree[f].size for f in plan)
    assert covered <= tree[0].size - 1
    assert [tree[f].size for f in plan] == sorted((tree[f].size for f in plan), reverse=True)
