"""`ctxkeep completion SHELL`: the script that makes the shell complete ctxkeep's commands,
options and session names (through argcomplete, from the CLI's own parser)."""

import argparse


def add_parser(commands) -> argparse.ArgumentParser:
    parser = commands.add_parser(
        "completion", help="shell completion for bash, zsh or fish",
        description="Print the completion script for SHELL. Load it with, for bash: "
                    "eval \"$(ctxkeep completion bash)\" (in ~/.bashrc); zsh: the same in "
                    "~/.zshrc; fish: ctxkeep completion fish > "
                    "~/.config/fish/completions/ctxkeep.fish")
    parser.add_argument("shell", choices=["bash", "zsh", "fish"])
    return parser


def run(args: argparse.Namespace) -> int:
    from argcomplete import shellcode
    print(shellcode(["ctxkeep"], shell=args.shell))
    return 0

