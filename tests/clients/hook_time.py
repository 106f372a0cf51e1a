#!/usr/bin/env python3
"""Whole-process time of one hook call as the client runs it: the command `agent-guard init`
wrote (the fail-closed shell wrapper included), run through `sh -c` with one event on stdin,
the way Claude Code, Codex and Gemini CLI start a command hook. The peer is `cat` of the same
event through the same shell. Prints a Markdown table for docs/performance.md.

Usage: hook_time.py [--guard PATH] [--runs N]
"""

import argparse
import json
import os
import statistics
import subprocess
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

EVENTS = {
    "claude": ("PreToolUse", ".claude/settings.json", "Bash"),
    "codex": ("PreToolUse", ".codex/hooks.json", "Bash"),
    "gemini": ("BeforeTool", ".gemini/settings.json", "run_shell_command"),
}


def installed_command(guard, client, proj, home):
    env = dict(os.environ, HOME=home)
    subprocess.run([guard, "init", client], cwd=proj, env=env, check=True, capture_output=True)
    event, settings, _ = EVENTS[client]
    with open(os.path.join(proj, settings)) as f:
        doc = json.load(f)
    return doc["hooks"][event][0]["hooks"][0]["command"], env


def time_runs(command, stdin, env, cwd, runs):
    samples = []
    for _ in range(runs):
        start = time.perf_counter()
        subprocess.run(["sh", "-c", command], input=stdin, env=env, cwd=cwd,
                       capture_output=True, text=True, check=False)
        samples.append((time.perf_counter() - start) * 1000)
    samples.sort()
    return statistics.median(samples), samples[int(len(samples) * 0.9) - 1]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--guard", default=os.path.join(ROOT, "target/release/agent-guard"))
    ap.add_argument("--runs", type=int, default=30)
    args = ap.parse_args()
    guard = os.path.abspath(args.guard)
    tmp = tempfile.mkdtemp(prefix="hook-time-")
    print("| client | call | installed command (median / p90) | without the wrapper | `cat` peer |")
    print("| --- | --- | --- | --- | --- |")
    for client, (event, _, shell_tool) in EVENTS.items():
        proj = tempfile.mkdtemp(dir=tmp)
        home = tempfile.mkdtemp(dir=tmp)
        subprocess.run(["git", "init", "-q"], cwd=proj, check=True)
        command, env = installed_command(guard, client, proj, home)
        for label, cmd in (("`ls`", "ls"), ("`rm -rf ~`", "rm -rf ~")):
            stdin = json.dumps({"session_id": "timing", "cwd": proj, "hook_event_name": event,
                                "tool_name": shell_tool, "tool_input": {"command": cmd},
                                "transcript_path": "", "permission_mode": "default"})
            hook = time_runs(command, stdin, env, proj, args.runs)
            bare = time_runs(command.split(" || {")[0], stdin, env, proj, args.runs)
            peer = time_runs("cat >/dev/null", stdin, env, proj, args.runs)
            print(f"| {client} | {label} | {hook[0]:.1f} / {hook[1]:.1f} ms | "
                  f"{bare[0]:.1f} / {bare[1]:.1f} ms | {peer[0]:.1f} / {peer[1]:.1f} ms |")


if __name__ == "__main__":
    main()
