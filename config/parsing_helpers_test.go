package config

// The helpers below build configurations that also accept the values of
// features shoal has not built (config/unbuilt.go). The tests that use them
// check the parsing, CONFIG GET/SET/REWRITE machinery against Redis 7.0.15,
// whatever the directive; unbuilt_test.go checks the refusals themselves
// with New and Load.

func newParsing() *Config {
	c := New()
	c.acceptUnbuilt = true
	return c
}

func loadParsing(args []string) (*Config, error) {
	return LoadWith(args, LoadOptions{acceptUnbuilt: true})
}
