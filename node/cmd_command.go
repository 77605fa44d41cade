package node

func commandHandlers() map[string]HandlerFunc {
	return map[string]HandlerFunc{}
}
