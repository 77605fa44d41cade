package node

func miscHandlers() map[string]HandlerFunc {
	return map[string]HandlerFunc{}
}
