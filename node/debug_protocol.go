package node

import "strings"

// debugProtocol replies with a sample of each RESP type (DEBUG PROTOCOL),
// exactly as Redis does; client test suites depend on it.
func debugProtocol(c *Client, name []byte) {
	switch strings.ToLower(string(name)) {
	case "string":
		c.BulkString("Hello World")
	case "integer":
		c.Int(12345)
	case "double":
		c.Double(3.141)
	case "bignum":
		c.BigNumber("1234567999999999999999999999999999999")
	case "null":
		c.Null()
	case "array":
		c.Array(3)
		for j := int64(0); j < 3; j++ {
			c.Int(j)
		}
	case "set":
		c.Set(3)
		for j := int64(0); j < 3; j++ {
			c.Int(j)
		}
	case "map":
		c.Map(3)
		for j := int64(0); j < 3; j++ {
			c.Int(j)
			c.Bool(j == 1)
		}
	case "attrib":
		if c.Proto >= 3 {
			c.attribute(1)
			c.BulkString("key-popularity")
			c.Array(2)
			c.BulkString("key:123")
			c.Int(90)
		}
		c.BulkString("Some real reply following the attribute")
	case "push":
		if c.Proto < 3 {
			c.Error("ERR RESP2 is not supported by this command")
			return
		}
		c.Push(2)
		c.BulkString("server-cpu-usage")
		c.Int(42)
		c.BulkString("Some real reply following the push reply")
	case "true":
		c.Bool(true)
	case "false":
		c.Bool(false)
	case "verbatim":
		c.Verbatim("This is a verbatim\nstring", "txt")
	default:
		c.Error("ERR Wrong protocol type name. Please use one of the following: string|integer|double|bignum|null|array|set|map|attrib|push|verbatim|true|false")
	}
}
