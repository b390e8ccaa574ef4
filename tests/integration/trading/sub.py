"""The desk's subscriber process: a JSON command a line on stdin (desk.handle), a JSON answer a line."""

import json
import sys

import eventpy  # first: it installs the import hook that finds bands.epy

import bands  # bands.epy, compiled on import
import desk

objects: dict = {}
for line in sys.stdin:
    print(json.dumps(desk.handle(bands, objects, *json.loads(line))), flush=True)
