package node

import "math"

// Geohash arithmetic of Redis's geo commands (geohash.c, geohash_helper.c),
// reimplemented so that scores interoperate with Redis: a position is a
// 52-bit interleaved geohash (26 bits of latitude in the odd... precisely:
// latitude bits in the even positions, longitude bits in the odd ones) over
// longitudes [-180, 180] and latitudes [-85.05112878, 85.05112878], stored
// as the member's score. Every floating-point expression keeps Redis's
// evaluation order and rounding (explicit float64 conversions forbid fused
// multiply-adds) so that cells, bounding boxes and distances come out
// identical.

const geoStepMax = 26 // 52 bits

// The ranges and constants live in variables, not Go constants, so that
// arithmetic on them is IEEE double arithmetic as in C (Go folds constant
// expressions exactly).
var (
	geoLatMin  = -85.05112878
	geoLatMax  = 85.05112878
	geoLongMin = -180.0
	geoLongMax = 180.0

	geoPi          = math.Pi
	geoDegToRad    = geoPi / 180.0 // D_R = M_PI / 180.0
	geoEarthRadius = 6372797.560856
	geoMercatorMax = 20037726.37
)

// geoHashBits is a geohash of step*2 bits.
type geoHashBits struct {
	bits uint64
	step uint8
}

func (h geoHashBits) isZero() bool { return h.bits == 0 && h.step == 0 }

type geoRange struct{ min, max float64 }

func (r geoRange) isZero() bool { return r.min == 0 && r.max == 0 }

// geoArea is a geohash cell.
type geoArea struct {
	hash      geoHashBits
	longitude geoRange
	latitude  geoRange
}

// spreadBits moves the low 32 bits of v to the even bit positions.
func spreadBits(v uint64) uint64 {
	v &= 0xFFFFFFFF
	v = (v | v<<16) & 0x0000FFFF0000FFFF
	v = (v | v<<8) & 0x00FF00FF00FF00FF
	v = (v | v<<4) & 0x0F0F0F0F0F0F0F0F
	v = (v | v<<2) & 0x3333333333333333
	v = (v | v<<1) & 0x5555555555555555
	return v
}

// squashBits gathers the even bit positions of v into its low 32 bits.
func squashBits(v uint64) uint64 {
	v &= 0x5555555555555555
	v = (v | v>>1) & 0x3333333333333333
	v = (v | v>>2) & 0x0F0F0F0F0F0F0F0F
	v = (v | v>>4) & 0x00FF00FF00FF00FF
	v = (v | v>>8) & 0x0000FFFF0000FFFF
	v = (v | v>>16) & 0x00000000FFFFFFFF
	return v
}

// interleave puts x's bits in the even positions and y's in the odd ones.
func interleave(x, y uint32) uint64 { return spreadBits(uint64(x)) | spreadBits(uint64(y))<<1 }

// deinterleave returns the even bits in the low word and the odd bits in
// the high word.
func deinterleave(v uint64) uint64 { return squashBits(v) | squashBits(v>>1)<<32 }

// geohashEncode encodes a position with step bits per coordinate; false
// when the position or the arguments are out of range.
func geohashEncode(lonRange, latRange geoRange, longitude, latitude float64, step uint8) (geoHashBits, bool) {
	if step > 32 || step == 0 || latRange.isZero() || lonRange.isZero() {
		return geoHashBits{}, false
	}
	if longitude > geoLongMax || longitude < geoLongMin || latitude > geoLatMax || latitude < geoLatMin {
		return geoHashBits{}, false
	}
	if latitude < latRange.min || latitude > latRange.max || longitude < lonRange.min || longitude > lonRange.max {
		return geoHashBits{step: step}, false
	}
	latOffset := (latitude - latRange.min) / (latRange.max - latRange.min)
	lonOffset := (longitude - lonRange.min) / (lonRange.max - lonRange.min)
	scale := float64(uint64(1) << step)
	latOffset *= scale
	lonOffset *= scale
	return geoHashBits{bits: interleave(uint32(latOffset), uint32(lonOffset)), step: step}, true
}

func geoCoordRanges() (lon, lat geoRange) {
	return geoRange{geoLongMin, geoLongMax}, geoRange{geoLatMin, geoLatMax}
}

// geohashEncodeWGS84 encodes with Redis's coordinate ranges.
func geohashEncodeWGS84(longitude, latitude float64, step uint8) (geoHashBits, bool) {
	lon, lat := geoCoordRanges()
	return geohashEncode(lon, lat, longitude, latitude, step)
}

// geohashDecode returns the cell of hash.
func geohashDecode(lonRange, latRange geoRange, hash geoHashBits) (geoArea, bool) {
	if hash.isZero() || latRange.isZero() || lonRange.isZero() {
		return geoArea{}, false
	}
	sep := deinterleave(hash.bits) // [lat][long]
	latScale := latRange.max - latRange.min
	lonScale := lonRange.max - lonRange.min
	ilato := uint32(sep)
	ilono := uint32(sep >> 32)
	div := float64(uint64(1) << hash.step)
	return geoArea{
		hash: hash,
		latitude: geoRange{
			min: latRange.min + float64(float64(ilato)/div*latScale),
			max: latRange.min + float64(float64(ilato+1)/div*latScale),
		},
		longitude: geoRange{
			min: lonRange.min + float64(float64(ilono)/div*lonScale),
			max: lonRange.min + float64(float64(ilono+1)/div*lonScale),
		},
	}, true
}

func geohashDecodeWGS84(hash geoHashBits) (geoArea, bool) {
	lon, lat := geoCoordRanges()
	return geohashDecode(lon, lat, hash)
}

// geoAreaCenter is geohashDecodeAreaToLongLat: the cell's centre, clamped
// to the valid ranges.
func geoAreaCenter(a geoArea) (lon, lat float64) {
	lon = (a.longitude.min + a.longitude.max) / 2
	lon = min(max(lon, geoLongMin), geoLongMax)
	lat = (a.latitude.min + a.latitude.max) / 2
	lat = min(max(lat, geoLatMin), geoLatMax)
	return lon, lat
}

// scoreToUint64 converts a score to the unsigned 64-bit geohash as C's
// (uint64_t) cast compiles on x86-64 (where Redis's replies were observed):
// values from 2^63 convert through a signed conversion of score-2^63, so
// 2^64 and beyond (and +inf) give 0; negative values wrap around; NaN,
// -inf and values below -2^63 give 2^63.
func scoreToUint64(score float64) uint64 {
	const two63 = 9223372036854775808.0
	switch {
	case score >= two63:
		if v := score - two63; v < two63 {
			return uint64(v) ^ 1<<63
		}
		return 0
	case score >= -two63 && score < two63:
		return uint64(int64(score))
	}
	return 1 << 63
}

// decodeGeohashScore is decodeGeohash: the position a score stands for.
func decodeGeohashScore(score float64) (lon, lat float64, ok bool) {
	a, ok := geohashDecodeWGS84(geoHashBits{bits: scoreToUint64(score), step: geoStepMax})
	if !ok {
		return 0, 0, false
	}
	lon, lat = geoAreaCenter(a)
	return lon, lat, true
}

// geohashAlign52Bits left-aligns a hash to 52 bits (the score).
func geohashAlign52Bits(h geoHashBits) uint64 { return h.bits << (52 - uint(h.step)*2) }

// geoScore encodes a valid position as its sorted set score.
func geoScore(lon, lat float64) uint64 {
	h, _ := geohashEncodeWGS84(lon, lat, geoStepMax)
	return geohashAlign52Bits(h)
}

func geohashMoveX(h *geoHashBits, d int8) {
	if d == 0 {
		return
	}
	x := h.bits & 0xaaaaaaaaaaaaaaaa
	y := h.bits & 0x5555555555555555
	zz := uint64(0x5555555555555555) >> (64 - uint(h.step)*2)
	if d > 0 {
		x = x + (zz + 1)
	} else {
		x = x | zz
		x = x - (zz + 1)
	}
	x &= 0xaaaaaaaaaaaaaaaa >> (64 - uint(h.step)*2)
	h.bits = x | y
}

func geohashMoveY(h *geoHashBits, d int8) {
	if d == 0 {
		return
	}
	x := h.bits & 0xaaaaaaaaaaaaaaaa
	y := h.bits & 0x5555555555555555
	zz := uint64(0xaaaaaaaaaaaaaaaa) >> (64 - uint(h.step)*2)
	if d > 0 {
		y = y + (zz + 1)
	} else {
		y = y | zz
		y = y - (zz + 1)
	}
	y &= 0x5555555555555555 >> (64 - uint(h.step)*2)
	h.bits = x | y
}

// geoNeighbors are the eight cells around one, in Redis's field order.
type geoNeighbors struct {
	north, east, west, south                   geoHashBits
	northEast, southEast, northWest, southWest geoHashBits
}

func geohashNeighbors(h geoHashBits) geoNeighbors {
	move := func(dx, dy int8) geoHashBits {
		n := h
		geohashMoveX(&n, dx)
		geohashMoveY(&n, dy)
		return n
	}
	return geoNeighbors{
		east: move(1, 0), west: move(-1, 0), south: move(0, -1), north: move(0, 1),
		northWest: move(-1, 1), northEast: move(1, 1), southEast: move(1, -1), southWest: move(-1, -1),
	}
}

// ---------------------------------------------------------------- search areas

func degRad(ang float64) float64 { return ang * geoDegToRad }
func radDeg(ang float64) float64 { return ang / geoDegToRad }

// geohashEstimateStepsByRadius picks the cell size for a search radius.
func geohashEstimateStepsByRadius(rangeMeters, lat float64) uint8 {
	if rangeMeters == 0 {
		return 26
	}
	step := 1
	for rangeMeters < geoMercatorMax {
		rangeMeters *= 2
		step++
	}
	step -= 2 // make sure the range is included in most of the base cases
	// Wider cells towards the poles.
	if lat > 66 || lat < -66 {
		step--
		if lat > 80 || lat < -80 {
			step--
		}
	}
	return uint8(min(max(step, 1), 26))
}

// geoShape is a search area: a circle (radius) or a box (width, height),
// in the unit whose size in meters is conversion, around (lon, lat).
type geoShape struct {
	circle        bool
	lon, lat      float64
	conversion    float64
	radius        float64
	width, height float64
	bounds        [4]float64 // min lon, min lat, max lon, max lat
}

// geohashBoundingBox computes the shape's bounding box.
func geohashBoundingBox(s *geoShape) {
	var height, width float64
	if s.circle {
		height = s.conversion * s.radius
		width = s.conversion * s.radius
	} else {
		height = s.conversion * (s.height / 2)
		width = s.conversion * (s.width / 2)
	}
	latDelta := radDeg(height / geoEarthRadius)
	lonDeltaTop := radDeg(width / geoEarthRadius / cosCR(degRad(s.lat+latDelta)))
	lonDeltaBottom := radDeg(width / geoEarthRadius / cosCR(degRad(s.lat-latDelta)))
	// Opposite directions in the two hemispheres.
	if s.lat < 0 {
		s.bounds[0] = s.lon - lonDeltaBottom
		s.bounds[2] = s.lon + lonDeltaBottom
	} else {
		s.bounds[0] = s.lon - lonDeltaTop
		s.bounds[2] = s.lon + lonDeltaTop
	}
	s.bounds[1] = s.lat - latDelta
	s.bounds[3] = s.lat + latDelta
}

// geoRadiusAreas is the centre cell and the neighbours to search (zero
// when useless).
type geoRadiusAreas struct {
	hash      geoHashBits
	area      geoArea
	neighbors geoNeighbors
}

// geohashCalculateAreasByShape is geohashCalculateAreasByShapeWGS84.
func geohashCalculateAreasByShape(s *geoShape) geoRadiusAreas {
	geohashBoundingBox(s)
	minLon, minLat, maxLon, maxLat := s.bounds[0], s.bounds[1], s.bounds[2], s.bounds[3]
	var radiusMeters float64
	if s.circle {
		radiusMeters = s.radius
	} else {
		radiusMeters = math.Sqrt(float64((s.width/2)*(s.width/2)) + float64((s.height/2)*(s.height/2)))
	}
	radiusMeters *= s.conversion

	steps := geohashEstimateStepsByRadius(radiusMeters, s.lat)
	lonR, latR := geoCoordRanges()
	hash, _ := geohashEncode(lonR, latR, s.lon, s.lat, steps)
	neighbors := geohashNeighbors(hash)
	area, _ := geohashDecode(lonR, latR, hash)

	// When the search area is near a cell edge, the estimated step may be
	// too fine for the neighbours to cover it: use one step coarser.
	decrease := false
	north, _ := geohashDecode(lonR, latR, neighbors.north)
	south, _ := geohashDecode(lonR, latR, neighbors.south)
	east, _ := geohashDecode(lonR, latR, neighbors.east)
	west, _ := geohashDecode(lonR, latR, neighbors.west)
	if north.latitude.max < maxLat || south.latitude.min > minLat ||
		east.longitude.max < maxLon || west.longitude.min > minLon {
		decrease = true
	}
	if steps > 1 && decrease {
		steps--
		hash, _ = geohashEncode(lonR, latR, s.lon, s.lat, steps)
		neighbors = geohashNeighbors(hash)
		area, _ = geohashDecode(lonR, latR, hash)
	}

	// Drop the neighbours the search area cannot reach.
	if steps >= 2 {
		if area.latitude.min < minLat {
			neighbors.south, neighbors.southWest, neighbors.southEast = geoHashBits{}, geoHashBits{}, geoHashBits{}
		}
		if area.latitude.max > maxLat {
			neighbors.north, neighbors.northEast, neighbors.northWest = geoHashBits{}, geoHashBits{}, geoHashBits{}
		}
		if area.longitude.min < minLon {
			neighbors.west, neighbors.southWest, neighbors.northWest = geoHashBits{}, geoHashBits{}, geoHashBits{}
		}
		if area.longitude.max > maxLon {
			neighbors.east, neighbors.southEast, neighbors.northEast = geoHashBits{}, geoHashBits{}, geoHashBits{}
		}
	}
	return geoRadiusAreas{hash: hash, area: area, neighbors: neighbors}
}

// ---------------------------------------------------------------- distances

// geoLatDistance is the distance between two latitudes on one meridian.
func geoLatDistance(lat1, lat2 float64) float64 {
	return geoEarthRadius * math.Abs(degRad(lat2)-degRad(lat1))
}

// geoDistance is Redis's haversine great-circle distance in meters.
func geoDistance(lon1, lat1, lon2, lat2 float64) float64 {
	lon1r := degRad(lon1)
	lon2r := degRad(lon2)
	v := sinCR((lon2r - lon1r) / 2)
	// Same longitude: the haversine reduces to the latitude difference.
	if v == 0 {
		return geoLatDistance(lat1, lat2)
	}
	lat1r := degRad(lat1)
	lat2r := degRad(lat2)
	u := sinCR((lat2r - lat1r) / 2)
	a := float64(u*u) + float64(float64(float64(cosCR(lat1r)*cosCR(lat2r))*v)*v)
	return 2.0 * geoEarthRadius * asinCR(math.Sqrt(a))
}

// geoDistanceInRectangle reports whether (x2, y2) lies in the box of
// width and height meters centred on (x1, y1), and its distance.
func geoDistanceInRectangle(widthM, heightM, x1, y1, x2, y2 float64) (float64, bool) {
	// The latitude distance is cheaper: test it first.
	if geoLatDistance(y2, y1) > heightM/2 {
		return 0, false
	}
	if geoDistance(x2, y2, x1, y2) > widthM/2 {
		return 0, false
	}
	return geoDistance(x1, y1, x2, y2), true
}
