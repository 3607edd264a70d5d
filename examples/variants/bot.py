#!/usr/bin/env python3
"""A toy support bot for the variants example: offline, deterministic.

Usage: bot.py SYSTEM_PROMPT_FILE QUESTION. It answers from a small table of facts; the
system prompt decides the style (a prompt that asks for the policy id gets it cited), and
$BOT_RELEASE=old is last year's bot, which forgot the newer policies.
"""
import os
import sys

FACTS = {
    "refund": ("Refunds are accepted within 30 days of purchase.", "P-1"),
    "shipping": ("Standard shipping takes 3 to 5 business days.", "P-2"),
    "warranty": ("Hardware carries a 2-year warranty.", "P-3"),
    "returns": ("Returns need the original packaging.", "P-4"),
    "exchange": ("Exchanges are free within 60 days.", "P-5"),
    "international": ("We ship to 40 countries.", "P-6"),
    "gift": ("Gift cards never expire.", "P-7"),
    "student": ("Students get 10% off with a valid ID.", "P-8"),
    "price-match": ("We match any advertised price within 14 days.", "P-9"),
    "repair": ("Out-of-warranty repairs start at $49.", "P-10"),
    "subscription": ("Subscriptions can be paused for up to 3 months.", "P-11"),
    "data": ("Account data is deleted 30 days after closing.", "P-12"),
}
NEW = {"gift", "student", "price-match", "repair", "subscription", "data"}

prompt = open(sys.argv[1]).read()
question = sys.argv[2].lower()
topic = next((t for t in FACTS if t in question), None)
if topic is None or (os.environ.get("BOT_RELEASE") == "old" and topic in NEW):
    print("Sorry, I don't know. Please contact support.")
else:
    fact, policy = FACTS[topic]
    cite = "cite the policy id" in prompt.lower()
    print(f"{fact} (policy {policy})" if cite else fact)
