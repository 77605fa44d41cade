package str

// The words of the rewritten effects of the string commands (Redis's shared
// objects): SET ... PXAT, GETEX's DEL / PEXPIREAT / PERSIST, INCRBYFLOAT's
// SET ... KEEPTTL. Read-only.
var (
	argSET       = []byte("SET")
	argPXAT      = []byte("PXAT")
	argKEEPTTL   = []byte("KEEPTTL")
	argDEL       = []byte("DEL")
	argPEXPIREAT = []byte("PEXPIREAT")
	argPERSIST   = []byte("PERSIST")
)
