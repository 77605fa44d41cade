// Package geo holds the geo commands (Redis 7.0's "geo" group). A geo index
// is a sorted set whose scores are 52-bit geohashes (package geohash);
// argument checks, their order and the error texts follow geo.c.
package geo

import (
	"fmt"
	"math"
	"slices"
	"strconv"

	"github.com/shoal-db/shoal/command"
	"github.com/shoal-db/shoal/commands/zset"
	"github.com/shoal-db/shoal/config"
	"github.com/shoal-db/shoal/geohash"
	"github.com/shoal-db/shoal/store"
	"github.com/shoal-db/shoal/strconvx"
)

// Handlers returns the geo commands' handlers by command name.
func Handlers() map[string]command.Handler {
	return map[string]command.Handler{
		"geoadd":               cmdGeoAdd,
		"geodist":              cmdGeoDist,
		"geohash":              cmdGeoHash,
		"geopos":               cmdGeoPos,
		"georadius":            func(c *command.Ctx, args [][]byte) { georadiusGeneric(c, args, 1, geoRadiusCoords) },
		"georadius_ro":         func(c *command.Ctx, args [][]byte) { georadiusGeneric(c, args, 1, geoRadiusCoords|geoNoStore) },
		"georadiusbymember":    func(c *command.Ctx, args [][]byte) { georadiusGeneric(c, args, 1, geoRadiusMember) },
		"georadiusbymember_ro": func(c *command.Ctx, args [][]byte) { georadiusGeneric(c, args, 1, geoRadiusMember|geoNoStore) },
		"geosearch":            func(c *command.Ctx, args [][]byte) { georadiusGeneric(c, args, 1, geoSearch) },
		"geosearchstore":       func(c *command.Ctx, args [][]byte) { georadiusGeneric(c, args, 2, geoSearch|geoSearchStore) },
	}
}

// parseLonLatOrReply is extractLongLatOrReply: two floats within the
// geohash ranges.
func parseLonLatOrReply(c *command.Ctx, lonArg, latArg []byte) (lon, lat float64, ok bool) {
	if lon, ok = zset.ParseDoubleOrReply(c, lonArg, ""); !ok {
		return 0, 0, false
	}
	if lat, ok = zset.ParseDoubleOrReply(c, latArg, ""); !ok {
		return 0, 0, false
	}
	if lon < geohash.LongMin || lon > geohash.LongMax || lat < geohash.LatMin || lat > geohash.LatMax {
		c.Error("ERR invalid longitude,latitude pair " + cFormatF(lon) + "," + cFormatF(lat))
		return 0, 0, false
	}
	return lon, lat, true
}

// cFormatF formats like C's "%f".
func cFormatF(f float64) string {
	switch {
	case math.IsInf(f, 1):
		return "inf"
	case math.IsInf(f, -1):
		return "-inf"
	case math.IsNaN(f):
		return "nan"
	}
	return strconv.FormatFloat(f, 'f', 6, 64)
}

// parseGeoUnitOrReply is extractUnitOrReply: meters per unit.
func parseGeoUnitOrReply(c *command.Ctx, b []byte) (float64, bool) {
	switch {
	case command.ArgIs(b, "m"):
		return 1, true
	case command.ArgIs(b, "km"):
		return 1000, true
	case command.ArgIs(b, "ft"):
		return 0.3048, true
	case command.ArgIs(b, "mi"):
		return 1609.34, true
	}
	c.Error("ERR unsupported unit provided. please use M, KM, FT, MI")
	return 0, false
}

// parseGeoDistanceOrReply is extractDistanceOrReply: radius and unit.
func parseGeoDistanceOrReply(c *command.Ctx, radiusArg, unitArg []byte) (radius, conversion float64, ok bool) {
	if radius, ok = zset.ParseDoubleOrReply(c, radiusArg, "need numeric radius"); !ok {
		return 0, 0, false
	}
	if radius < 0 {
		c.Error("ERR radius cannot be negative")
		return 0, 0, false
	}
	if conversion, ok = parseGeoUnitOrReply(c, unitArg); !ok {
		return 0, 0, false
	}
	return radius, conversion, true
}

// parseGeoBoxOrReply is extractBoxOrReply: width, height and unit.
func parseGeoBoxOrReply(c *command.Ctx, args [][]byte) (width, height, conversion float64, ok bool) {
	if width, ok = zset.ParseDoubleOrReply(c, args[0], "need numeric width"); !ok {
		return 0, 0, 0, false
	}
	if height, ok = zset.ParseDoubleOrReply(c, args[1], "need numeric height"); !ok {
		return 0, 0, 0, false
	}
	if height < 0 || width < 0 {
		c.Error("ERR height or width cannot be negative")
		return 0, 0, 0, false
	}
	if conversion, ok = parseGeoUnitOrReply(c, args[2]); !ok {
		return 0, 0, 0, false
	}
	return width, height, conversion, true
}

// replyGeoDistance writes a distance with four decimals, rounded half to
// even as Redis's fixedpoint_d2string (llrint) does; a bulk string in every
// protocol.
func replyGeoDistance(c *command.Ctx, d float64) {
	c.Bulk(appendGeoDistance(nil, d))
}

func appendGeoDistance(dst []byte, d float64) []byte {
	if d == 0 {
		return append(dst, "0.0000"...)
	}
	v := math.RoundToEven(float64(d * 10000))
	var u uint64
	switch {
	case v >= 9223372036854775808.0 || math.IsNaN(v):
		u = 1 << 63 // llrint's out-of-range result
	case v < 0:
		dst = append(dst, '-')
		u = uint64(-int64(max(v, -9223372036854775808.0)))
	default:
		u = uint64(v)
	}
	dst = strconv.AppendUint(dst, u/10000, 10)
	frac := u % 10000
	return append(dst, '.', byte('0'+frac/1000), byte('0'+frac/100%10), byte('0'+frac/10%10), byte('0'+frac%10))
}

// replyHumanDouble is addReplyHumanLongDouble: a bulk string in RESP2, a
// double in RESP3.
func replyHumanDouble(c *command.Ctx, f float64) {
	var buf [64]byte
	c.DoubleText(strconvx.AppendHumanFloat(buf[:0], f))
}

// ---------------------------------------------------------------- GEOADD

// GEOADD key [NX|XX] [CH] longitude latitude member [...]: ZADD with the
// positions turned into scores.
func cmdGeoAdd(c *command.Ctx, args [][]byte) {
	xx, nx := false, false
	longIdx := 2
options:
	for ; longIdx < len(args); longIdx++ {
		switch a := args[longIdx]; {
		case command.ArgIs(a, "nx"):
			nx = true
		case command.ArgIs(a, "xx"):
			xx = true
		case command.ArgIs(a, "ch"):
		default:
			break options
		}
	}
	if (len(args)-longIdx)%3 != 0 || xx && nx {
		c.ErrSyntax()
		return
	}
	elements := (len(args) - longIdx) / 3
	zargs := make([][]byte, 0, longIdx+2*elements)
	zargs = append(zargs, []byte("zadd"))
	zargs = append(zargs, args[1:longIdx]...)
	for i := 0; i < elements; i++ {
		at := longIdx + 3*i
		lon, lat, ok := parseLonLatOrReply(c, args[at], args[at+1])
		if !ok {
			return
		}
		zargs = append(zargs, strconv.AppendUint(nil, geohash.Score(lon, lat), 10), args[at+2])
	}
	zset.AddGeneric(c, zargs, 0)
}

// ---------------------------------------------------------------- lookups

// geoMemberPos is longLatFromMember.
func geoMemberPos(z *store.ZSet, member []byte) (lon, lat float64, ok bool) {
	score, found := z.Score(member)
	if !found {
		return 0, 0, false
	}
	return geohash.DecodeScore(score)
}

// GEODIST key member1 member2 [unit]
func cmdGeoDist(c *command.Ctx, args [][]byte) {
	toMeter := 1.0
	if len(args) == 5 {
		var ok bool
		if toMeter, ok = parseGeoUnitOrReply(c, args[4]); !ok {
			return
		}
	} else if len(args) > 5 {
		c.ErrSyntax()
		return
	}
	z, ok := zset.Read(c, args[1])
	if !ok {
		return
	}
	if z == nil {
		c.Null()
		return
	}
	s1, ok1 := z.Score(args[2])
	s2, ok2 := z.Score(args[3])
	if !ok1 || !ok2 {
		c.Null()
		return
	}
	lon1, lat1, ok1 := geohash.DecodeScore(s1)
	lon2, lat2, ok2 := geohash.DecodeScore(s2)
	if !ok1 || !ok2 {
		c.Null()
		return
	}
	replyGeoDistance(c, geohash.Distance(lon1, lat1, lon2, lat2)/toMeter)
}

// GEOHASH key member [...]: 11-character standard geohashes, re-encoded
// over latitudes [-90, 90] from the cell centre.
func cmdGeoHash(c *command.Ctx, args [][]byte) {
	z, ok := zset.Read(c, args[1])
	if !ok {
		return
	}
	c.Array(len(args) - 2)
	for _, m := range args[2:] {
		var score float64
		found := false
		if z != nil {
			score, found = z.Score(m)
		}
		if !found {
			c.Null()
			continue
		}
		lon, lat, ok := geohash.DecodeScore(score)
		if !ok {
			c.Null()
			continue
		}
		buf := geohash.Base32(lon, lat)
		c.Bulk(buf[:])
	}
}

// GEOPOS key member [...]
func cmdGeoPos(c *command.Ctx, args [][]byte) {
	z, ok := zset.Read(c, args[1])
	if !ok {
		return
	}
	c.Array(len(args) - 2)
	for _, m := range args[2:] {
		var lon, lat float64
		found := false
		if z != nil {
			lon, lat, found = geoMemberPos(z, m)
		}
		if !found {
			c.NullArray()
			continue
		}
		c.Array(2)
		replyHumanDouble(c, lon)
		replyHumanDouble(c, lat)
	}
}

// ---------------------------------------------------------------- searches

type geoFlags uint8

const (
	geoRadiusCoords geoFlags = 1 << iota // GEORADIUS: around coordinates
	geoRadiusMember                      // GEORADIUSBYMEMBER: around a member
	geoNoStore                           // the _RO variants: no STORE/STOREDIST
	geoSearch                            // GEOSEARCH argument syntax
	geoSearchStore                       // GEOSEARCHSTORE: STOREDIST flag, destination first
)

// geoPoint is one search result; member aliases the searched set.
type geoPoint struct {
	lon, lat, dist, score float64
	member                []byte
}

// geoWithinShape decodes score and reports whether it lies in the shape,
// with its distance from the centre.
func geoWithinShape(s *geohash.Shape, score float64) (p geoPoint, ok bool) {
	lon, lat, ok := geohash.DecodeScore(score)
	if !ok {
		return p, false
	}
	p = geoPoint{lon: lon, lat: lat, score: score}
	p.dist, ok = s.Contains(lon, lat)
	return p, ok
}

// geoPointsInBox appends the members of cell h that lie in the shape,
// stopping once limit (0: none) points were found.
func geoPointsInBox(z *store.ZSet, h geohash.Hash, s *geohash.Shape, points []geoPoint, limit int64) []geoPoint {
	next := h
	next.Bits++
	r := store.ScoreRange{Min: float64(geohash.Align52Bits(h)), Max: float64(geohash.Align52Bits(next)), MaxEx: true}
	z.RangeByScore(&r, 0, -1, false, func(m []byte, score float64) bool {
		if p, ok := geoWithinShape(s, score); ok {
			p.member = m
			points = append(points, p)
		}
		return !(len(points) > 0 && limit > 0 && int64(len(points)) >= limit)
	})
	return points
}

// geoPointsAround is membersOfAllNeighbors: the centre cell, then north,
// south, east, west, north-east, north-west, south-east, south-west,
// skipping zeroed cells and a cell equal to the last one searched.
func geoPointsAround(z *store.ZSet, a geohash.Areas, s *geohash.Shape, limit int64) []geoPoint {
	n := a.Neighbors
	cells := [9]geohash.Hash{a.Hash, n.North, n.South, n.East, n.West, n.NorthEast, n.NorthWest, n.SouthEast, n.SouthWest}
	var points []geoPoint
	last := -1
	for i, h := range cells {
		if h.IsZero() {
			continue
		}
		// With huge radii adjacent neighbours can be the same cell.
		if last > 0 && h == cells[last] {
			continue
		}
		if len(points) > 0 && limit > 0 && int64(len(points)) >= limit {
			break
		}
		points = geoPointsInBox(z, h, s, points, limit)
		last = i
	}
	return points
}

// georadiusGeneric implements GEORADIUS[_RO], GEORADIUSBYMEMBER[_RO],
// GEOSEARCH and GEOSEARCHSTORE; srcIdx is the searched key's position.
func georadiusGeneric(c *command.Ctx, args [][]byte, srcIdx int, flags geoFlags) {
	var storeKey []byte
	storing, storeDist := false, false
	z, ok := zset.Read(c, args[srcIdx])
	if !ok {
		return
	}
	var shape geohash.Shape
	var baseArgs int
	switch {
	case flags&geoRadiusCoords != 0:
		baseArgs = 6
		shape.Circle = true
		if shape.Lon, shape.Lat, ok = parseLonLatOrReply(c, args[2], args[3]); !ok {
			return
		}
		if shape.Radius, shape.Conversion, ok = parseGeoDistanceOrReply(c, args[4], args[5]); !ok {
			return
		}
	case flags&geoRadiusMember != 0 && z == nil:
		// No source: parse the options anyway, to know which reply to give.
		baseArgs = 5
	case flags&geoRadiusMember != 0:
		baseArgs = 5
		shape.Circle = true
		if shape.Lon, shape.Lat, ok = geoMemberPos(z, args[2]); !ok {
			c.Error("ERR could not decode requested zset member")
			return
		}
		if shape.Radius, shape.Conversion, ok = parseGeoDistanceOrReply(c, args[3], args[4]); !ok {
			return
		}
	default: // geoSearch
		baseArgs = 2
		if flags&geoSearchStore != 0 {
			baseArgs = 3
			storeKey, storing = args[1], true
		}
	}

	withDist, withHash, withCoords := false, false, false
	fromMember, fromLoc, byRadius, byBox := false, false, false, false
	sort := 0 // 0 none, 1 asc, 2 desc
	anyMatch := false
	var count int64
	if len(args) > baseArgs {
		remaining := len(args) - baseArgs
		for i := 0; i < remaining; i++ {
			arg := args[baseArgs+i]
			switch {
			case command.ArgIs(arg, "withdist"):
				withDist = true
			case command.ArgIs(arg, "withhash"):
				withHash = true
			case command.ArgIs(arg, "withcoord"):
				withCoords = true
			case command.ArgIs(arg, "any"):
				anyMatch = true
			case command.ArgIs(arg, "asc"):
				sort = 1
			case command.ArgIs(arg, "desc"):
				sort = 2
			case command.ArgIs(arg, "count") && i+1 < remaining:
				n, ok := command.ParseInt64(args[baseArgs+i+1])
				if !ok {
					c.ErrNotInteger()
					return
				}
				if n <= 0 {
					c.Error("ERR COUNT must be > 0")
					return
				}
				count = n
				i++
			case (command.ArgIs(arg, "store") || command.ArgIs(arg, "storedist")) && i+1 < remaining && flags&(geoNoStore|geoSearch) == 0:
				storeKey, storing = args[baseArgs+i+1], true
				storeDist = command.ArgIs(arg, "storedist")
				i++
			case command.ArgIs(arg, "storedist") && flags&geoSearch != 0 && flags&geoSearchStore != 0:
				storeDist = true
			case command.ArgIs(arg, "frommember") && i+1 < remaining && flags&geoSearch != 0 && !fromLoc:
				if z != nil {
					if shape.Lon, shape.Lat, ok = geoMemberPos(z, args[baseArgs+i+1]); !ok {
						c.Error("ERR could not decode requested zset member")
						return
					}
				}
				fromMember = true
				i++
			case command.ArgIs(arg, "fromlonlat") && i+2 < remaining && flags&geoSearch != 0 && !fromMember:
				if shape.Lon, shape.Lat, ok = parseLonLatOrReply(c, args[baseArgs+i+1], args[baseArgs+i+2]); !ok {
					return
				}
				fromLoc = true
				i += 2
			case command.ArgIs(arg, "byradius") && i+2 < remaining && flags&geoSearch != 0 && !byBox:
				if shape.Radius, shape.Conversion, ok = parseGeoDistanceOrReply(c, args[baseArgs+i+1], args[baseArgs+i+2]); !ok {
					return
				}
				shape.Circle = true
				byRadius = true
				i += 2
			case command.ArgIs(arg, "bybox") && i+3 < remaining && flags&geoSearch != 0 && !byRadius:
				if shape.Width, shape.Height, shape.Conversion, ok = parseGeoBoxOrReply(c, args[baseArgs+i+1:baseArgs+i+4]); !ok {
					return
				}
				shape.Circle = false
				byBox = true
				i += 3
			default:
				c.ErrSyntax()
				return
			}
		}
	}

	if storing && (withDist || withHash || withCoords) {
		what := "STORE option in GEORADIUS"
		if flags&geoSearchStore != 0 {
			what = "GEOSEARCHSTORE"
		}
		c.Error("ERR " + what + " is not compatible with WITHDIST, WITHHASH and WITHCOORD options")
		return
	}
	if flags&geoSearch != 0 && !(fromMember || fromLoc) {
		c.Error(fmt.Sprintf("ERR exactly one of FROMMEMBER or FROMLONLAT can be specified for %s", command.CString(args[0])))
		return
	}
	if flags&geoSearch != 0 && !(byRadius || byBox) {
		c.Error(fmt.Sprintf("ERR exactly one of BYRADIUS and BYBOX can be specified for %s", command.CString(args[0])))
		return
	}
	if anyMatch && count == 0 {
		c.Error("ERR the ANY argument requires COUNT argument")
		return
	}

	if z == nil {
		if storing {
			geoDeleteStoreKey(c, storeKey)
			c.Int(0)
		} else {
			c.Array(0)
		}
		return
	}

	// COUNT needs an order to return the closest points, unless ANY.
	if count != 0 && sort == 0 && !anyMatch {
		sort = 1
	}
	areas := geohash.AreasByShape(&shape)
	limit := int64(0)
	if anyMatch {
		limit = count
	}
	points := geoPointsAround(z, areas, &shape, limit)

	if len(points) == 0 && !storing {
		c.Array(0)
		return
	}
	returned := len(points)
	if count != 0 && int64(returned) > count {
		returned = int(count)
	}
	switch sort {
	case 1:
		slices.SortStableFunc(points, func(a, b geoPoint) int { return cmpFloat(a.dist, b.dist) })
	case 2:
		slices.SortStableFunc(points, func(a, b geoPoint) int { return cmpFloat(b.dist, a.dist) })
	}
	points = points[:returned]

	if !storing {
		options := 0
		for _, on := range []bool{withDist, withCoords, withHash} {
			if on {
				options++
			}
		}
		c.Array(returned)
		for i := range points {
			p := &points[i]
			if options > 0 {
				c.Array(options + 1)
			}
			c.Bulk(p.member)
			if withDist {
				replyGeoDistance(c, p.dist/shape.Conversion)
			}
			if withHash {
				c.Int(cDoubleToInt64(p.score))
			}
			if withCoords {
				c.Array(2)
				replyHumanDouble(c, p.lon)
				replyHumanDouble(c, p.lat)
			}
		}
		return
	}

	elems := make([]store.ZMember, 0, returned)
	seen := make(map[string]bool, returned)
	for i := range points {
		p := &points[i]
		score := p.score
		if storeDist {
			score = p.dist / shape.Conversion
		}
		// The same member cannot come twice from disjoint cells; guard the
		// set's invariant anyway.
		if seen[command.Bstr(p.member)] {
			continue
		}
		seen[command.Bstr(p.member)] = true
		elems = append(elems, store.ZMember{Member: string(p.member), Score: score})
	}
	slices.SortFunc(elems, zset.CompareMember)
	if len(elems) == 0 {
		geoDeleteStoreKey(c, storeKey)
		c.Int(0)
		return
	}
	c.DB().SetValue(storeKey, store.BuildZSet(elems, zset.Limits(c)))
	c.SignalKeyReady(storeKey)
	if flags&geoSearch != 0 {
		c.Notify(config.NotifyZset, "geosearchstore", storeKey)
	} else {
		c.Notify(config.NotifyZset, "georadiusstore", storeKey)
	}
	c.Dirty(int64(returned)) // one change per element stored, as Redis
	c.Int(int64(returned))
}

// cDoubleToInt64 is C's (long long) cast on x86-64: out of range (or NaN)
// gives the minimum int64.
func cDoubleToInt64(f float64) int64 {
	if f >= -9223372036854775808.0 && f < 9223372036854775808.0 {
		return int64(f)
	}
	return math.MinInt64
}

func cmpFloat(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// RadiusKeys locates GEORADIUS's keys (the key procedure node registers
// for it): what Redis 7.0's key specs report (COMMAND GETKEYS uses them) --
// the source, the key after the first STORE and the key after the first
// STOREDIST, searched from the first optional argument -- plus, when a later
// STORE/STOREDIST overrides those, the destination the command actually
// writes (Redis's own georadiusGetKeys rule), so that the dispatcher locks
// it.
func RadiusKeys(args [][]byte) ([]int, error) { return geoStoreKeys(args, 6), nil }

// RadiusByMemberKeys is RadiusKeys for GEORADIUSBYMEMBER.
func RadiusByMemberKeys(args [][]byte) ([]int, error) { return geoStoreKeys(args, 5), nil }

func geoStoreKeys(args [][]byte, optStart int) []int {
	keys := []int{1}
	for _, kw := range []string{"store", "storedist"} {
		for i := optStart; i < len(args)-1; i++ {
			if command.ArgIs(args[i], kw) {
				keys = append(keys, i+1)
				break
			}
		}
	}
	written := -1
	for i := 5; i < len(args); i++ {
		if (command.ArgIs(args[i], "store") || command.ArgIs(args[i], "storedist")) && i+1 < len(args) {
			written = i + 1
			i++
		}
	}
	if written >= 0 && !slices.Contains(keys, written) {
		keys = append(keys, written)
	}
	return keys
}

// geoDeleteStoreKey deletes the destination of a search that found
// nothing, with its "del" event if it existed.
func geoDeleteStoreKey(c *command.Ctx, storeKey []byte) {
	if !c.DB().Delete(storeKey) {
		c.NoEffect() // nothing deleted: no change, as Redis
		return
	}
	c.Notify(config.NotifyGeneric, "del", storeKey)
}
