package node

// HandlerFunc runs one command. args[0] is the command name as the client
// sent it; for subcommands args[1] is the subcommand. The dispatcher has
// already checked arity, authentication and routing, and holds the locks of
// every slot the command's keys hash to.
type HandlerFunc func(c *Client, args [][]byte)
