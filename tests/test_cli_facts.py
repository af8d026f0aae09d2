"""Layer 4 from the command line: `facts set|get|list|retire|history|undo`, `candidates
list|approve|reject`, `--workspace`, `reflect`, and what `ask` proposes — each through
`tui.cli.main` in-process (tests/support/cli.py) against the HTTP stand-in and a real DuckDB
file."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.support.cli import NOW, Env, assert_ok, assert_one_line, cli_env, printed_json, run_cli
from tests.support.ollama_standin import OllamaStandIn

FACT_FIELDS = {
    "key",
    "type",
    "scope",
    "workspace",
    "body",
    "confidence",
    "proof",
    "status",
    "source",
    "last_seen",
}
CANDIDATE_FIELDS = {"id", "key", "type", "scope", "body", "proof", "origin"}


def env_for(tmp_path: Path, standin: OllamaStandIn) -> Env:
    home = tmp_path / "home"
    return cli_env(
        home, tmp_path, OLLAMA_HOST=standin.host, STRAYLIGHT_NOW=NOW, STRAYLIGHT_WORKSPACE="blyck"
    )


def json_of(env: Env, *args: str) -> Any:
    return printed_json(run_cli(env, *args, "--json"))


def test_set_get_list_retire_with_the_documented_json(
    tmp_path: Path, standin: OllamaStandIn
) -> None:
    env = env_for(tmp_path, standin)
    fact = json_of(
        env,
        "facts",
        "set",
        "Deploy: Blyck",
        "--type",
        "capability",
        "--body",
        "This PC can deploy blyck: npm run dist, aws s3 cp.",
        "--proof",
        "aws sts get-caller-identity ok",
    )
    assert set(fact) >= FACT_FIELDS
    assert (fact["key"], fact["workspace"], fact["confidence"], fact["status"]) == (
        "deploy:blyck",
        "blyck",
        1.0,
        "active",
    )
    assert json_of(env, "facts", "get", "deploy:blyck")["body"].startswith("This PC can deploy")
    listed = json_of(env, "facts", "list", "--type", "capability")
    assert [f["key"] for f in listed] == ["deploy:blyck"]
    assert json_of(env, "facts", "list", "--type", "rule") == []
    other = json_of(env, "facts", "list", "--workspace", "elsewhere")
    assert other == []  # workspace facts stay in their workspace
    assert json_of(env, "facts", "retire", "deploy:blyck")["status"] == "retired"
    assert json_of(env, "facts", "list", "--status", "retired")[0]["key"] == "deploy:blyck"
    # retiring it again says so (it used to say `no fact 'deploy:blyck'`, as for a typo)
    assert_one_line(run_cli(env, "facts", "retire", "deploy:blyck"), 1, "is already retired")


def test_overwrite_history_and_undo(tmp_path: Path, standin: OllamaStandIn) -> None:
    env = env_for(tmp_path, standin)
    for body in ("Staging runs Postgres 15.", "Staging runs Postgres 16."):
        assert_ok(run_cli(env, "facts", "set", "db:staging", "--type", "fact", "--body", body))
    history = json_of(env, "facts", "history", "db:staging")
    assert [v["fact"]["body"] for v in history] == [
        "Staging runs Postgres 15.",
        "Staging runs Postgres 16.",
    ]
    undone = json_of(env, "facts", "undo", "db:staging")
    assert undone["restored"]["body"] == "Staging runs Postgres 15."


def test_scope_picks_the_global_fact_when_the_workspace_has_one_with_the_same_key(
    tmp_path: Path, standin: OllamaStandIn
) -> None:
    """A workspace fact and a global fact share a key: `retire` and `undo` took the
    workspace one, and nothing reached the global one while the workspace one lived."""
    env = env_for(tmp_path, standin)
    for scope, body in (("global", "Use ruff for lint."), ("workspace", "Use flake8 here.")):
        setting = ("facts", "set", "rule:lint", "--type", "rule", "--body", body)
        assert_ok(run_cli(env, *setting, "--scope", scope))
    retired = json_of(env, "facts", "retire", "rule:lint", "--scope", "global")
    assert (retired["scope"], retired["status"]) == ("global", "retired")
    live = {f["scope"]: f["status"] for f in json_of(env, "facts", "list", "--status", "all")}
    assert live == {"global": "retired", "workspace": "active"}
    again = run_cli(env, "facts", "retire", "rule:lint", "--scope", "global")
    assert_one_line(again, 1, "'rule:lint' (global) is already retired")
    assert json_of(env, "facts", "retire", "rule:lint")["scope"] == "workspace"
    # both retired: undo brings back the one asked for, not always the workspace one
    undone = json_of(env, "facts", "undo", "rule:lint", "--scope", "global")
    assert (undone["restored"]["scope"], undone["restored"]["status"]) == ("global", "active")
    assert json_of(env, "facts", "get", "rule:lint")["body"] == "Use ruff for lint."
    other = env_for(tmp_path / "other", standin)
    assert_ok(run_cli(other, "facts", "set", "rule:fmt", "--type", "rule", "--body", "Black."))
    missing = run_cli(other, "facts", "retire", "rule:fmt", "--scope", "global")
    assert_one_line(missing, 1, "no fact 'rule:fmt' (global)")


def test_requires_given_twice_keeps_every_key(tmp_path: Path, standin: OllamaStandIn) -> None:
    """`--requires KEY …` as one list or as the flag repeated: every key is kept (the second
    flag used to replace the first's keys without a word)."""
    env = env_for(tmp_path, standin)
    common = ("facts", "set", "deploy:app", "--type", "procedure", "--body", "Run make deploy.")
    fact = json_of(env, *common, "--requires", "db:up", "vpn:on", "--requires", "ci:green")
    assert fact["requires"] == ["db:up", "vpn:on", "ci:green"]
    assert json_of(env, "facts", "get", "deploy:app")["requires"] == fact["requires"]


def test_errors_are_one_line_with_stable_exit_codes(tmp_path: Path, standin: OllamaStandIn) -> None:
    env = env_for(tmp_path, standin)
    for action in ("get", "retire", "history", "undo"):  # before any database: still exit 2
        assert_one_line(run_cli(env, "facts", action, ":"), 2, "empty fact key")
    assert_one_line(run_cli(env, "facts", "get", "nope"), 1, "no fact")
    assert_one_line(run_cli(env, "facts", "set", "k", "--type", "wish", "--body", "x"), 2)
    assert_one_line(run_cli(env, "facts", "set", ":", "--type", "fact", "--body", "x"), 2, "key")
    long_body = run_cli(env, "facts", "set", "k", "--type", "fact", "--body", "x" * 5001)
    # grouped as `remember`'s limit line is (it said `5001 characters; at most 2000`)
    assert_one_line(long_body, 2, "fact body is 5,001 characters; at most 2,000")
    assert_one_line(run_cli(env, "candidates", "approve", "99"), 1, "no candidate")
    assert json_of(env, "candidates", "list") == []


def test_a_success_in_ask_is_a_candidate_until_approved(
    tmp_path: Path, standin: OllamaStandIn
) -> None:
    env = env_for(tmp_path, standin)
    standin.script_reply("Nice, the deployment went through.")
    assert_ok(run_cli(env, "ask", "I just deployed blyck to S3 with aws s3 cp and it worked."))
    [candidate] = json_of(env, "candidates", "list")
    assert set(candidate) >= CANDIDATE_FIELDS
    assert (candidate["type"], candidate["origin"]) == ("capability", "promotion")
    assert json_of(env, "facts", "list") == []  # not before approval
    fact = json_of(env, "candidates", "approve", str(candidate["id"]))
    assert fact["key"] == candidate["key"]
    assert [f["key"] for f in json_of(env, "facts", "list")] == [candidate["key"]]
    assert_one_line(run_cli(env, "candidates", "approve", str(candidate["id"])), 1, "already")


def test_a_rejected_candidate_is_not_proposed_again(tmp_path: Path, standin: OllamaStandIn) -> None:
    env = env_for(tmp_path, standin)
    text = "I just deployed blyck to S3 with aws s3 cp and it worked."
    standin.script_reply("Nice.")
    assert_ok(run_cli(env, "ask", text))
    [candidate] = json_of(env, "candidates", "list")
    rejected = json_of(env, "candidates", "reject", str(candidate["id"]))
    assert rejected == {"id": candidate["id"], "status": "rejected"}
    standin.script_reply("Nice again.")
    assert_ok(run_cli(env, "ask", text))
    assert json_of(env, "candidates", "list") == []


def test_approve_with_an_empty_key_is_refused_like_facts_set(
    tmp_path: Path, standin: OllamaStandIn
) -> None:
    """`candidates approve ID --key ""` approved the candidate under its old key without a
    word, as if no edit was asked for; an empty key is refused (exit 2), as `facts set ""`
    refuses it, and the candidate stays pending."""
    env = env_for(tmp_path, standin)
    proposed = json_of(
        env, "candidates", "propose", "db:staging", "--type", "fact", "--body", "Postgres 16."
    )
    for empty in ("", "   "):
        refused = run_cli(env, "candidates", "approve", str(proposed["id"]), "--key", empty)
        assert_one_line(refused, 2, "empty fact key")
    assert [c["status"] for c in json_of(env, "candidates", "list")] == ["pending"]
    assert json_of(env, "facts", "list") == []
    renamed = json_of(env, "candidates", "approve", str(proposed["id"]), "--key", "db:stage")
    assert (renamed["key"], renamed["body"]) == ("db:stage", "Postgres 16.")


def test_known_facts_reach_the_prompt_of_ask(tmp_path: Path, standin: OllamaStandIn) -> None:
    env = env_for(tmp_path, standin)
    assert_ok(
        run_cli(env, "facts", "set", "prod:db", "--type", "rule", "--body", "Never touch PROD.")
    )
    standin.script_reply("Understood.")
    assert_ok(run_cli(env, "ask", "What should I keep in mind?"))
    system = standin.chat_requests()[-1]["messages"][0]["content"]
    assert "## Known facts" in system and "Never touch PROD." in system


def test_reflect_proposes_candidates_from_the_latest_conversation(
    tmp_path: Path, standin: OllamaStandIn
) -> None:
    env = env_for(tmp_path, standin)
    standin.script_reply("Noted.")
    assert_ok(run_cli(env, "ask", "We decided: blyck uses Postgres 16 from now on."))
    item = {
        "type": "decision",
        "key": "db:blyck",
        "body": "blyck uses Postgres 16.",
        "scope": "workspace",
        "proof": "blyck uses Postgres 16 from now on",
    }
    standin.script_reply(json.dumps({"facts": [item]}))
    result = json_of(env, "reflect")
    assert [c["key"] for c in result["candidates"]] == ["db:blyck"]
    assert [c["origin"] for c in json_of(env, "candidates", "list")] == ["reflection"]


def test_reflect_with_a_model_that_only_thinks_says_so(
    tmp_path: Path, standin: OllamaStandIn
) -> None:
    """A thinking model whose structured reply held only thinking: `reflect` printed
    "dropped (not JSON: Expecting value): " and counted a dropped item that did not exist."""
    standin.set_models(["llama3.2", "qwen3:8b", "nomic-embed-text"])
    env = env_for(tmp_path, standin)
    standin.script_reply("Noted.")
    assert_ok(run_cli(env, "ask", "We decided: blyck uses Postgres 16 from now on."))
    standin.script_reply("", thinking="The user decided on Postgres 16 for blyck, so maybe")
    proc = run_cli(env, "--model", "qwen3:8b", "reflect")
    assert proc.returncode == 5, (proc.returncode, proc.stdout, proc.stderr)
    assert "gave no answer, only 51 characters of thinking" in proc.stderr
    assert "not JSON" not in proc.stdout + proc.stderr


def test_reflect_refuses_a_conversation_value_no_id_can_be_without_repeating_it(
    tmp_path: Path, standin: OllamaStandIn
) -> None:
    """`reflect --conversation` with a pasted token printed it back (`no conversation
    'ghp_…' in the logs`, exit 1); like `history --conversation` it is exit 2, the value
    not repeated. An unknown valid id stays exit 1."""
    env = env_for(tmp_path, standin)
    token = "ghp_" + "a1B2c3D4e5" * 4
    for value in (token, "BAD ID"):
        refused = run_cli(env, "reflect", "--conversation", value)
        assert_one_line(refused, 2, "--conversation wants")
        assert value not in refused.stderr
    assert_one_line(run_cli(env, "reflect", "--conversation", "no-such"), 1, "'no-such'")


# ------------------------------------------------------------ CLI and TUI agree (issue 16)


def test_facts_list_shows_active_facts_by_default_like_the_tui(
    tmp_path: Path, standin: OllamaStandIn
) -> None:
    env = env_for(tmp_path, standin)
    for key in ("deploy:blyck", "db:blyck"):
        assert_ok(run_cli(env, "facts", "set", key, "--type", "fact", "--body", f"About {key}."))
    assert_ok(run_cli(env, "facts", "retire", "db:blyck"))
    assert [f["key"] for f in json_of(env, "facts", "list")] == ["deploy:blyck"]
    everything = json_of(env, "facts", "list", "--status", "all")
    assert sorted(f["key"] for f in everything) == ["db:blyck", "deploy:blyck"]
    assert [f["key"] for f in json_of(env, "facts", "list", "--status", "retired")] == ["db:blyck"]


def test_all_workspaces_names_each_facts_workspace(tmp_path: Path, standin: OllamaStandIn) -> None:
    env = env_for(tmp_path, standin)
    assert_ok(run_cli(env, "facts", "set", "db:x", "--type", "fact", "--body", "In blyck."))
    other = dict(env, STRAYLIGHT_WORKSPACE="harbour")
    assert_ok(run_cli(other, "facts", "set", "db:y", "--type", "fact", "--body", "In harbour."))
    listed = json_of(env, "facts", "list", "--all-workspaces")
    assert {(f["key"], f["workspace"]) for f in listed} == {("db:x", "blyck"), ("db:y", "harbour")}
    plain = run_cli(env, "facts", "list", "--all-workspaces")
    assert_ok(plain)
    lines = sorted(plain.stdout.splitlines())
    assert "(workspace blyck," in lines[0] and "(workspace harbour," in lines[1], lines


def test_candidates_list_all_workspaces_names_each_candidates_workspace(
    tmp_path: Path, standin: OllamaStandIn
) -> None:
    """A candidate proposed in another workspace can be approved by its id from here; it can
    be found too (before: `candidates list` showed only this workspace's)."""
    env = env_for(tmp_path, standin)
    other = dict(env, STRAYLIGHT_WORKSPACE="harbour")
    propose = ("candidates", "propose", "db:y", "--type", "fact", "--body", "In harbour.")
    assert_ok(run_cli(other, *propose))
    assert json_of(env, "candidates", "list") == []
    [listed] = json_of(env, "candidates", "list", "--all-workspaces")
    assert (listed["key"], listed["workspace"]) == ("db:y", "harbour")
    plain = run_cli(env, "candidates", "list", "--all-workspaces")
    assert_ok(plain)
    assert "db:y  fact (workspace harbour, from cli): In harbour." in plain.stdout


def test_reflect_says_what_was_dropped_and_why(tmp_path: Path, standin: OllamaStandIn) -> None:
    env = env_for(tmp_path, standin)
    standin.script_reply("Noted.")
    assert_ok(run_cli(env, "ask", "We decided: blyck uses Postgres 16 from now on."))
    invented = {
        "type": "decision",
        "key": "db:blyck",
        "body": "blyck uses MySQL.",
        "scope": "workspace",
        "proof": "we switched to MySQL yesterday",
    }
    standin.script_reply(json.dumps({"facts": [invented]}))
    result = json_of(env, "reflect")
    assert result["candidates"] == []
    [dropped] = result["dropped"]
    assert "db:blyck" in dropped["item"] and "proof" in dropped["reason"], dropped
    standin.script_reply(json.dumps({"facts": [invented]}))
    plain = run_cli(env, "reflect")
    assert_ok(plain)
    assert "0 new candidates" in plain.stderr and "1 dropped" in plain.stderr
    assert "dropped (" in plain.stderr and "db:blyck" in plain.stderr


def test_a_missing_data_dir_gives_read_only_commands_a_hint(
    tmp_path: Path, standin: OllamaStandIn
) -> None:
    env = env_for(tmp_path, standin)
    home = tmp_path / "home"
    every_list = (["candidates", "list"], ["jobs", "list"], ["hypotheses", "list"], ["recall", "x"])
    for command in (["status"], ["facts", "list"], ["history"], *every_list):
        proc = run_cli(env, *command)
        assert proc.returncode == 0, proc.stderr
        assert f"no data dir at {home} — mistyped STRAYLIGHT_HOME?" in proc.stderr, command
        assert not home.exists()
    flagged = run_cli(env, "status", "--home", str(tmp_path / "hoem"))
    assert flagged.returncode == 0 and "mistyped --home?" in flagged.stderr
    assert_ok(run_cli(env, "facts", "set", "db:x", "--type", "fact", "--body", "Exists."))
    assert "no data dir" not in run_cli(env, "status").stderr


def test_status_help_names_what_it_shows(tmp_path: Path, standin: OllamaStandIn) -> None:
    proc = run_cli(env_for(tmp_path, standin), "status", "--help")
    assert proc.returncode == 0
    text = " ".join(proc.stdout.split())
    for part in ("embedding model", "headroom", "facts", "hypotheses", "context window"):
        assert part in text, part


def test_a_fact_retired_by_decay_shows_the_confidence_charged_up_to_its_retirement(
    tmp_path: Path, standin: OllamaStandIn
) -> None:
    """Confidence loses 0.05 for each full 30 unverified days, and a retired fact no longer
    decays: so the decay run that retires a fact first charges its confidence up to that
    day (a retired fact never shows the value of its last active day). Once retired it
    keeps that value; the list and the screen show the same number."""
    start = {**env_for(tmp_path, standin), "STRAYLIGHT_NOW": "2030-01-01T00:00:00Z"}
    assert_ok(run_cli(start, "facts", "set", "deploy:blyck", "--type", "fact", "--body", "x y"))
    # stale at 120 days (4 periods charged), retired at 212 days (7 periods)
    stale = {**start, "STRAYLIGHT_NOW": "2030-05-01T00:00:00Z"}
    assert_ok(run_cli(stale, "jobs", "run", "decay"))
    later = {**start, "STRAYLIGHT_NOW": "2030-08-01T00:00:00Z"}
    assert_ok(run_cli(later, "jobs", "run", "decay"))
    listed = {f["key"]: f for f in json_of(later, "facts", "list", "--status", "all")}
    assert (listed["deploy:blyck"]["status"], listed["deploy:blyck"]["confidence"]) == (
        "retired",
        0.65,
    )
    plain = run_cli(later, "facts", "list", "--status", "retired")
    assert "deploy:blyck  fact (workspace, 0.65) [retired]" in plain.stdout, plain.stdout
    # retired, it decays no further
    much_later = {**start, "STRAYLIGHT_NOW": "2031-08-01T00:00:00Z"}
    assert_ok(run_cli(much_later, "jobs", "run", "decay"))
    again = {f["key"]: f for f in json_of(much_later, "facts", "list", "--status", "all")}
    assert again["deploy:blyck"]["confidence"] == 0.65


def test_a_candidate_for_a_key_already_set_shows_the_body_it_replaces(
    tmp_path: Path, standin: OllamaStandIn
) -> None:
    """Approving overwrites the fact of that key: the list and the approval say what is
    replaced, and how to get it back, before a vaguer body silently wins."""
    env = env_for(tmp_path, standin)
    detailed = "blyck deploys with npm run dist, then aws s3 cp to s3://blyck-prod"
    assert_ok(
        run_cli(env, "facts", "set", "deploy:blyck", "--type", "capability", "--body", detailed)
    )
    standin.script_reply("Nice.")
    assert_ok(run_cli(env, "ask", "I just deployed blyck to S3 with aws s3 cp and it worked."))
    [candidate] = json_of(env, "candidates", "list")
    assert candidate["key"] == "deploy:blyck" and candidate["replaces"] == detailed
    listed = run_cli(env, "candidates", "list")
    assert f"    replaces: {detailed}" in listed.stdout.splitlines()
    approved = run_cli(env, "candidates", "approve", str(candidate["id"]))
    assert_ok(approved)
    assert f"replaced: {detailed} (straylight facts undo deploy:blyck restores it)" in (
        approved.stdout
    )
