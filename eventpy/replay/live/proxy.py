"""A byte-counting TCP relay, run as its own process so that its work does not compete with the
driver for the GIL: `python -m eventpy.replay.live.proxy HOST:PORT [HOST:PORT ...]`.

It listens on one free port of 127.0.0.1 per target and prints them as a JSON line
(`{"ports": [...]}`); every connection accepted there is relayed to its target. Subscribers of a
live run connect through it, so that the bytes the server sends them are counted the same way for
every engine: what crosses the TCP connection in each direction (the protocol's payload and framing,
not TCP/IP headers). On each line `count` on stdin it answers `{"down": [...], "up": [...]}`, bytes
towards the clients and towards the targets per target since it started; it exits at end of input.
"""

from __future__ import annotations

import asyncio
import json
import socket
import sys
import threading

CHUNK = 1 << 16


class Relay:
    def __init__(self, targets: list[tuple[str, int]]) -> None:
        self.targets = targets
        self.down = [0] * len(targets)  # server -> client
        self.up = [0] * len(targets)  # client -> server

    async def serve(self) -> list[int]:
        ports = []
        for i in range(len(self.targets)):
            server = await asyncio.start_server(lambda r, w, i=i: self._relay(i, r, w), "127.0.0.1", 0)
            ports.append(server.sockets[0].getsockname()[1])
        return ports

    async def _relay(self, i: int, client_r: asyncio.StreamReader, client_w: asyncio.StreamWriter) -> None:
        host, port = self.targets[i]
        try:
            server_r, server_w = await asyncio.open_connection(host, port)
        except OSError:
            client_w.close()
            return
        for w in (client_w, server_w):
            sock = w.get_extra_info("socket")
            if sock is not None:  # the engines' clients set TCP_NODELAY too; a relay must not add Nagle delay
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        await asyncio.gather(self._pipe(server_r, client_w, self.down, i),
                             self._pipe(client_r, server_w, self.up, i), return_exceptions=True)

    @staticmethod
    async def _pipe(r: asyncio.StreamReader, w: asyncio.StreamWriter, counter: list[int], i: int) -> None:
        try:
            while data := await r.read(CHUNK):
                counter[i] += len(data)
                w.write(data)
                await w.drain()
        except (ConnectionError, OSError):
            pass
        finally:
            w.close()


def main(argv: list[str]) -> int:
    targets = []
    for a in argv:
        host, _, port = a.rpartition(":")
        targets.append((host, int(port)))
    relay = Relay(targets)
    loop = asyncio.new_event_loop()
    ports = loop.run_until_complete(relay.serve())
    print(json.dumps({"ports": ports}), flush=True)

    def commands() -> None:
        for line in sys.stdin:
            if line.strip() == "count":
                print(json.dumps({"down": list(relay.down), "up": list(relay.up)}), flush=True)
        loop.call_soon_threadsafe(loop.stop)

    threading.Thread(target=commands, daemon=True).start()
    loop.run_forever()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
