package node

// The words of rewritten effects (Redis's shared objects): the effect of a
// non-deterministic or relative command is written with these, never with
// the client's own argv[0]. Read-only.
var (
	argDEL       = []byte("DEL")
	argPEXPIREAT = []byte("PEXPIREAT")
)
