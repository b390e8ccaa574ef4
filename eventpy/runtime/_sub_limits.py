"""What one subscription may hold. A broker refuses a SUB beyond these (with a logged reason: it
keeps a hostile or buggy client from making it compile and evaluate without bound), so the guard
compiler refuses, at subscribe, a guard that would make one: the program gets a GuardError
instead of a subscription that the broker dropped and that never receives an event."""

MAX_CONJUNCTIONS = 1024
MAX_VARIABLES = 4096
# The nodes of all the attribute expressions of one SUB together (each at most MAX_NODES of
# guards._exprs). A broker compiles them when the SUB arrives and evaluates them for the events
# its index cannot rule out: 260,000 nodes (a 1 MiB frame) held a broker's event loop 5 s.
MAX_EXPRESSION_NODES = 8192
