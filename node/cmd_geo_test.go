package node

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"
)

// Geo tests: byte-exact replies, and differential runs against a real
// redis-server 7.0 (skipped when it is not installed).

func TestGeoRepliesExact(t *testing.T) {
	s := startTestServer(t)
	tc := dialTest(t, s)
	cases := []strCase{
		zc(":2\r\n", "geoadd", "Sicily", "13.361389", "38.115556", "Palermo", "15.087269", "37.502669", "Catania"),
		zc("$11\r\n166274.1516\r\n", "geodist", "Sicily", "Palermo", "Catania"),
		zc("$8\r\n166.2742\r\n", "geodist", "Sicily", "Palermo", "Catania", "km"),
		zc("*2\r\n*2\r\n$20\r\n13.36138933897018433\r\n$20\r\n38.11555639549629859\r\n*-1\r\n", "geopos", "Sicily", "Palermo", "nowhere"),
		zc("*2\r\n$11\r\nsqc8b49rny0\r\n$-1\r\n", "geohash", "Sicily", "Palermo", "nowhere"),
		zc("*1\r\n*2\r\n$7\r\nCatania\r\n$7\r\n56.4413\r\n", "georadius", "Sicily", "15", "37", "100", "km", "withdist"),
		zc("-ERR invalid longitude,latitude pair 200.000000,100.000000\r\n", "geoadd", "Sicily", "200", "100", "x"),
		zc("-ERR unsupported unit provided. please use M, KM, FT, MI\r\n", "geodist", "Sicily", "Palermo", "Catania", "yards"),
		zc("-ERR exactly one of FROMMEMBER or FROMLONLAT can be specified for GeoSearch\r\n", "GeoSearch", "Sicily", "byradius", "1", "km", "asc", "withdist"),
		zc("-ERR the ANY argument requires COUNT argument\r\n", "geosearch", "Sicily", "fromlonlat", "15", "37", "byradius", "1", "km", "any"),
	}
	runStrCases(t, tc, cases)
	// A later STORE overrides the first: its key is locked and reported too.
	if got, want := tc.do("command", "getkeys", "georadius", "src", "1", "2", "3", "km", "store", "a", "store", "b"), "*3\r\n$3\r\nsrc\r\n$1\r\na\r\n$1\r\nb\r\n"; got != want {
		t.Errorf("COMMAND GETKEYS georadius: %q, want %q", got, want)
	}
}

func geoScript() [][]string {
	var cmds [][]string
	add := func(args ...string) { cmds = append(cmds, args) }
	add("geoadd", "Sicily", "13.361389", "38.115556", "Palermo", "15.087269", "37.502669", "Catania")
	add("geoadd", "Sicily", "ch", "13.361389", "38.115556", "Palermo", "12.758489", "38.788135", "edge1", "17.241510", "38.788135", "edge2")
	add("geoadd", "Sicily", "xx", "ch", "13.5", "38.1", "Palermo", "1", "1", "newone")
	add("geoadd", "Sicily", "nx", "0", "0", "Palermo")
	add("geoadd", "Sicily", "nx", "xx", "0", "0", "x")
	add("geoadd", "Sicily", "gt", "0", "0", "x")
	add("geoadd", "Sicily", "0", "0")
	add("geoadd", "Sicily", "abc", "0", "x")
	add("geoadd", "Sicily", "180", "85.05112878", "corner", "-180", "-85.05112878", "corner2")
	add("geoadd", "Sicily", "180.0001", "0", "x")
	add("geoadd", "Sicily", "0", "-85.06", "x")
	add("geoadd", "Sicily", "inf", "0", "x")
	add("zrange", "Sicily", "0", "-1", "withscores")
	add("geopos", "Sicily", "Palermo", "Catania", "edge1", "corner", "corner2", "missing")
	add("geopos", "nokey", "a")
	add("geohash", "Sicily", "Palermo", "Catania", "edge1", "corner", "corner2", "missing")
	add("geohash", "nokey", "a")
	for _, u := range []string{"m", "km", "ft", "mi", "KM", "x"} {
		add("geodist", "Sicily", "Palermo", "Catania", u)
	}
	add("geodist", "Sicily", "Palermo", "Palermo")
	add("geodist", "Sicily", "Palermo", "missing")
	add("geodist", "nokey", "a", "b")
	add("geodist", "Sicily", "Palermo", "Catania", "km", "extra")
	add("geodist", "Sicily", "corner", "corner2")
	for _, opts := range [][]string{{}, {"withdist"}, {"withcoord"}, {"withhash"}, {"withdist", "withcoord", "withhash", "asc"}, {"desc"},
		{"count", "1"}, {"count", "2", "desc"}, {"count", "1", "any"}, {"any"}, {"count", "0"}, {"count", "x"}, {"count"}, {"bogus"}} {
		add(append([]string{"georadius", "Sicily", "15", "37", "200", "km"}, opts...)...)
		add(append([]string{"georadius_ro", "Sicily", "15", "37", "200", "km"}, opts...)...)
		add(append([]string{"georadiusbymember", "Sicily", "Palermo", "200", "km"}, opts...)...)
		add(append([]string{"geosearch", "Sicily", "fromlonlat", "15", "37", "byradius", "200", "km"}, opts...)...)
		add(append([]string{"geosearch", "Sicily", "frommember", "Palermo", "bybox", "400", "400", "km"}, opts...)...)
	}
	add("georadius", "Sicily", "15", "37", "-1", "km")
	add("georadius", "Sicily", "15", "37", "x", "km")
	add("georadius", "Sicily", "15", "37", "1", "yd")
	add("georadius", "Sicily", "200", "37", "1", "km")
	add("georadius", "nokey", "15", "37", "1", "km")
	add("georadius", "nokey", "15", "37", "1", "km", "store", "dst")
	add("georadius_ro", "Sicily", "15", "37", "200", "km", "store", "dst")
	add("georadiusbymember", "Sicily", "missing", "200", "km")
	add("georadiusbymember", "nokey", "missing", "x", "y")
	add("georadiusbymember", "nokey", "missing", "x", "y", "store", "dst")
	add("georadius", "Sicily", "15", "37", "200", "km", "store", "dst")
	add("zrange", "dst", "0", "-1", "withscores")
	add("georadius", "Sicily", "15", "37", "200", "km", "storedist", "dst")
	add("zrange", "dst", "0", "-1", "withscores")
	add("georadius", "Sicily", "15", "37", "200", "km", "storedist", "dst", "withdist")
	add("georadius", "Sicily", "15", "37", "200", "km", "store", "dst", "count", "1", "desc")
	add("zrange", "dst", "0", "-1", "withscores")
	add("georadius", "Sicily", "0", "0", "1", "m", "store", "dst")
	add("exists", "dst")
	add("geosearchstore", "dst", "Sicily", "fromlonlat", "15", "37", "byradius", "200", "km")
	add("zrange", "dst", "0", "-1", "withscores")
	add("geosearchstore", "dst", "Sicily", "fromlonlat", "15", "37", "byradius", "200", "km", "storedist", "asc")
	add("zrange", "dst", "0", "-1", "withscores")
	add("object", "encoding", "dst")
	add("geosearchstore", "dst", "Sicily", "fromlonlat", "15", "37", "byradius", "200", "km", "withdist")
	add("geosearchstore", "dst", "Sicily", "fromlonlat", "15", "37", "byradius", "200", "km", "store", "x")
	add("geosearchstore", "dst", "nokey", "fromlonlat", "15", "37", "byradius", "200", "km")
	add("exists", "dst")
	add("geosearch", "Sicily", "fromlonlat", "15", "37")
	add("geosearch", "Sicily", "byradius", "1", "km")
	add("geosearch", "Sicily", "frommember", "Palermo", "fromlonlat", "1", "2", "byradius", "1", "km")
	add("geosearch", "Sicily", "fromlonlat", "1", "2", "frommember", "Palermo", "byradius", "1", "km")
	add("geosearch", "Sicily", "frommember", "Palermo", "byradius", "1", "km", "bybox", "1", "1", "km")
	add("geosearch", "Sicily", "frommember", "missing", "byradius", "1", "km")
	add("geosearch", "nokey", "frommember", "missing", "byradius", "1", "km")
	add("geosearch", "Sicily", "frommember", "Palermo", "bybox", "-1", "1", "km")
	add("geosearch", "Sicily", "frommember", "Palermo", "bybox", "x", "1", "km")
	add("geosearch", "Sicily", "frommember", "Palermo", "bybox", "1", "x", "km")
	add("geosearch", "Sicily", "frommember", "Palermo", "byradius", "x", "km")
	add("geosearch", "Sicily", "frommember", "Palermo", "byradius", "1", "km", "storedist")
	add("geosearch", "Sicily", "frommember", "Palermo", "byradius", "0", "km")
	add("geosearch", "Sicily", "frommember", "corner", "byradius", "5000", "km", "withdist", "asc")
	add("geosearch", "Sicily", "fromlonlat", "0", "0", "byradius", "20000", "km", "withdist", "asc")
	add("geosearch", "Sicily", "fromlonlat", "0", "0", "bybox", "40000", "40000", "km", "withdist", "asc")
	// Extreme shapes.
	add("georadius", "Sicily", "15", "37", "1e300", "km", "asc")
	add("georadius", "Sicily", "15", "37", "inf", "km", "withdist", "asc")
	add("georadius", "Sicily", "15", "37", "0", "km")
	add("georadius", "Sicily", "180", "85.05112878", "1", "km", "withdist")
	add("georadius", "Sicily", "-180", "-85.05112878", "20000", "km", "withdist", "desc")
	add("geosearch", "Sicily", "fromlonlat", "15", "37", "bybox", "1e300", "1e300", "km", "asc")
	add("geosearch", "Sicily", "fromlonlat", "15", "37", "bybox", "inf", "0", "km", "asc")
	add("geosearch", "Sicily", "fromlonlat", "179.9", "0", "bybox", "50000", "100", "km", "withdist", "asc")
	add("zadd", "Sicily", "-5", "negscore", "1e20", "hugescore", "inf", "infscore")
	add("geopos", "Sicily", "negscore", "hugescore", "infscore")
	add("geohash", "Sicily", "negscore", "hugescore", "infscore")
	add("geodist", "Sicily", "negscore", "hugescore")
	add("set", "str", "x")
	add("geoadd", "str", "1", "1", "a")
	add("geopos", "str", "a")
	add("geodist", "str", "a", "b")
	add("geohash", "str", "a")
	add("georadius", "str", "1", "1", "1", "km")
	add("geosearch", "str", "fromlonlat", "1", "1", "byradius", "1", "km")
	add("georadius", "Sicily", "15", "37", "200", "km", "store", "str")
	add("type", "str")
	for _, cmd := range [][]string{
		{"georadius", "src", "1", "2", "3", "km", "store", "a"}, {"georadius", "src", "1", "2", "3", "km", "storedist", "a", "store", "b"},
		{"georadiusbymember", "src", "m", "3", "km", "store", "a"}, {"georadiusbymember", "src", "m", "3", "store", "a"},
		{"georadius_ro", "src", "1", "2", "3", "km"}, {"geosearchstore", "dst", "src", "frommember", "m", "byradius", "1", "km"},
		{"geosearch", "src", "frommember", "m", "byradius", "1", "km"},
	} {
		add(append([]string{"command", "getkeys"}, cmd...)...)
	}
	return cmds
}

func TestGeoDifferential(t *testing.T) {
	realAddr := startRealRedis(t)
	s := startTestServer(t)
	for _, resp := range []string{"2", "3"} {
		ours, real := dialTest(t, s), dialTestAddr(t, realAddr)
		for _, c := range [][]string{{"flushall"}, {"hello", resp}, {"config", "resetstat"}} {
			ours.do(c...)
			real.do(c...)
		}
		zsetDiff(t, ours, real, geoScript(), "geo resp"+resp, true)
		if got, want := keyspaceStats(ours.do("info", "stats")), keyspaceStats(real.do("info", "stats")); got != want {
			t.Errorf("resp%s keyspace stats %s, Redis %s", resp, got, want)
		}
	}
}

// TestGeoRandomDifferential adds random points and compares distances,
// positions, hashes and searches of random shapes with Redis.
func TestGeoRandomDifferential(t *testing.T) {
	realAddr := startRealRedis(t)
	s := startTestServer(t)
	ours, real := dialTest(t, s), dialTestAddr(t, realAddr)
	rng := rand.New(rand.NewPCG(5, 9))
	same := func(cmd ...string) {
		t.Helper()
		if got, want := ours.do(cmd...), real.do(cmd...); got != want {
			t.Fatalf("%q\n got %q\nwant %q", cmd, got, want)
		}
	}
	same("flushall")
	lon := func() string { return fmt.Sprintf("%.6f", rng.Float64()*360-180) }
	lat := func() string { return fmt.Sprintf("%.6f", rng.Float64()*170-85) }
	// A dense cluster and a world-wide spread.
	for i := 0; i < 300; i++ {
		same("geoadd", "pts", fmt.Sprintf("%.6f", 2+rng.Float64()), fmt.Sprintf("%.6f", 48+rng.Float64()), fmt.Sprint("p", i))
		same("geoadd", "pts", lon(), lat(), fmt.Sprint("w", i))
	}
	member := func() string {
		if rng.IntN(2) == 0 {
			return fmt.Sprint("p", rng.IntN(300))
		}
		return fmt.Sprint("w", rng.IntN(300))
	}
	deadline := time.Now().Add(20 * time.Second)
	for i := 0; i < 1500 && time.Now().Before(deadline); i++ {
		switch rng.IntN(6) {
		case 0:
			same("geodist", "pts", member(), member(), []string{"m", "km", "mi", "ft"}[rng.IntN(4)])
		case 1:
			same("geopos", "pts", member(), member())
		case 2:
			same("geohash", "pts", member(), member())
		case 3:
			r := fmt.Sprint(rng.IntN(200) + 1)
			same("geosearch", "pts", "frommember", member(), "byradius", r, "km", "withdist", "withcoord", "withhash", "asc")
		case 4:
			same("geosearch", "pts", "fromlonlat", fmt.Sprintf("%.4f", 2+rng.Float64()), fmt.Sprintf("%.4f", 48+rng.Float64()),
				"bybox", fmt.Sprint(rng.IntN(100)+1), fmt.Sprint(rng.IntN(100)+1), "km", "withdist", "desc", "count", fmt.Sprint(rng.IntN(20)+1))
		case 5:
			same("georadius", "pts", lon(), lat(), fmt.Sprint(rng.IntN(3000)+1), "km", "withdist", "asc", "store", "out")
			same("zrange", "out", "0", "-1", "withscores")
		}
	}
}
