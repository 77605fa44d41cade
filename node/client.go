package node

// Client is one connection's session state.
type Client struct {
}
