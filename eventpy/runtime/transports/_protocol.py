"""The version of the wire protocol this eventpy speaks, alone in a module: `eventpy --version`
names it without loading the codec and messages that _handshake (which re-exports it) needs."""

PROTOCOL = 5  # 2: FLUSH carries a budget and FLUSHACK the silent links (a peer of 1 would refuse them);
# 3: a subscriber's ADV may say it does not publish (a peer of 2 would refuse its 4th field);
# 4: a broker's summary SUB may say it moves with time (a 5th field a peer of 3 would refuse);
# 5: a broker tells a client its per-client limits (LIMITS, after the handshake) and a REFUSED
# may name a subscription (a 3rd field); a client of 4 would refuse both
