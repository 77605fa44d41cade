package node

func debugHandlers() map[string]HandlerFunc {
	return map[string]HandlerFunc{}
}
