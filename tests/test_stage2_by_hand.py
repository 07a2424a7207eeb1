"""The by-hand stage-2 measurement: whole repositories are sampled, and answers are scored against labels."""

import json

from bench import stage2_by_hand as s2


def rows(repo, n, kind):
    user = "thanks, perfect" if kind == "none" else "no, make it human readable"
    return [
        {
            "id": f"{repo.replace('/', '_')}-{i}",
            "source": f"{repo}@abc:log.md",
            "prev_user": "list files",
            "prev_assistant": "ls -S",
            "user": user,
            "assistant": "ok",
            "kind": kind,
            "is_correction": kind != "none",
        }
        for i in range(n)
    ]


DATA = rows("a/one", 3, "correction") + rows("b/two", 4, "none") + rows("c/three", 5, "retry")


def test_sample_takes_whole_repositories_in_a_seeded_order():
    chosen = s2.sample(DATA, 4, seed=1)
    assert chosen == s2.sample(DATA, 4, seed=1) and len(chosen) >= 4
    for repo in {s2.repository(r) for r in chosen}:
        assert [r for r in chosen if s2.repository(r) == repo] == [r for r in DATA if s2.repository(r) == repo]


def test_score_counts_stage_two_alone_and_with_stage_one():
    answers = {r["id"]: json.dumps({"kind": "correction" if r["kind"] == "correction" else "none"}) for r in DATA}
    report = s2.score(DATA, answers)
    alone = report["stage2 alone"]
    assert (alone["precision"]["k"], alone["precision"]["n"], alone["recall"]["n"]) == (3, 3, 8)  # retries missed
    assert (report["n"], report["positives"], report["repositories"]) == (12, 8, 3)


def test_prompts_are_the_exact_messages_and_hold_no_label(tmp_path):
    s2.write_prompts(DATA[:1], tmp_path)
    system, user = s2.confirmation_messages(s2.window(DATA[0]))
    assert (tmp_path / "a_one-0.txt").read_text() == user["content"]
    assert (tmp_path / "SYSTEM.txt").read_text() == system["content"]
    assert '"kind"' not in user["content"]


def test_slices_split_agent_transcripts_from_aider_logs():
    agent = [dict(r, id=f"l5-{i:04d}") for i, r in enumerate(rows("d/four", 2, "correction"))]
    answers = {r["id"]: json.dumps({"kind": r["kind"]}) for r in DATA + agent}
    report = s2.score_by_slice(DATA + agent, answers)
    assert set(report) == {"all", "aider logs", "agent transcripts"}
    assert (report["all"]["n"], report["aider logs"]["n"], report["agent transcripts"]["n"]) == (14, 12, 2)
    assert report["agent transcripts"]["stage2 alone"]["recall"]["k"] == 2


def test_nested_cv_decisions_are_read_per_window_id(tmp_path):
    held = {r["id"]: {"score": 0.5, "standalone": False, "candidate": r["kind"] != "none"} for r in DATA}
    cv = tmp_path / "cv.json"
    cv.write_text(json.dumps({"held_out": held}))
    answers = {r["id"]: json.dumps({"kind": "correction"}) for r in DATA}
    report = s2.score(DATA, answers, s2.nested_cv_stage1(cv))
    assert report["stage1 standalone"]["recall"]["k"] == 0
    both = report["stage1 candidate and stage2"]
    assert (both["precision"]["k"], both["precision"]["n"], both["recall"]["n"]) == (8, 8, 8)


def test_later_samples_take_the_repositories_that_follow_in_the_same_order():
    first, second = s2.sample(DATA, 4, seed=1), s2.sample(DATA, 4, seed=1, number=2)
    repos = [{s2.repository(r) for r in part} for part in (first, second)]
    assert second and not repos[0] & repos[1]
    third = s2.sample(DATA, 4, seed=1, number=3)
    assert sorted(r["id"] for r in first + second + third) == sorted(r["id"] for r in DATA)
    assert s2.sample(DATA, 4, seed=1, number=9) == [] == s2.sample(DATA, 4, seed=1, number=0)


def test_an_unreadable_answer_falls_back_to_stage_one_as_in_the_product():
    answers = {r["id"]: "I am not sure" for r in DATA}

    def stage1_fn(row, threshold):
        return row["kind"] != "none"

    report = s2.score(DATA, answers, stage1_fn)
    assert report["stage2 alone"]["recall"]["k"] == 0
    both = report["stage1 candidate and stage2"]
    assert (both["precision"]["k"], both["recall"]["k"], both["recall"]["n"]) == (8, 8, 8)


def test_only_windows_whose_prompt_scrubbing_changes_are_sent_again(tmp_path):
    from bench import stage2_scrubbed

    secret = dict(DATA[0], id="s-1", user="no, my key is ghp_16C7e42F292c6912E7710c838347Ae178B4a, use it")
    unanswered = dict(secret, id="s-2")
    picked = stage2_scrubbed.changed([*DATA, secret, unanswered], {r["id"] for r in DATA} | {"s-1"})
    assert [r["id"] for r in picked] == ["s-1"]
    stage2_scrubbed.write(picked, tmp_path)
    sent = (tmp_path / "scrubbed" / "s-1.txt").read_text()
    assert "ghp_16C7e42F292c6912E7710c838347Ae178B4a" not in sent and "use it" in sent
    assert "ghp_16C7e42F292c6912E7710c838347Ae178B4a" in (tmp_path / "raw" / "s-1.txt").read_text()
