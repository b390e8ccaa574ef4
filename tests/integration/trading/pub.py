"""The desk's exchange process: a JSON command a line on stdin (desk.publish), a JSON answer a line."""

import json
import sys

import eventpy  # first: it installs the import hook that finds bands.epy

import bands  # bands.epy, compiled on import
import desk

node = eventpy.connect()
for method in (bands.BandMonitor.quote, bands.BandMonitor.retune, bands.WatchlistMonitor.quote):
    node.advertise(method)
eventpy.drain(20)  # the subscriptions come back along the advertisements
print(json.dumps("ready"), flush=True)
for line in sys.stdin:
    print(json.dumps(desk.publish(bands, *json.loads(line))), flush=True)
