// Package geohash is the geohash arithmetic of Redis's geo commands
// (geohash.c, geohash_helper.c), reimplemented so that scores interoperate
// with Redis: a position is a 52-bit interleaved geohash (latitude bits in
// the even positions, longitude bits in the odd ones) over longitudes
// [-180, 180] and latitudes [-85.05112878, 85.05112878], stored as the
// member's sorted set score. Every floating-point expression keeps Redis's
// evaluation order and rounding (explicit float64 conversions forbid fused
// multiply-adds, and sin, cos and asin are correctly rounded as glibc's) so
// that cells, bounding boxes and distances come out identical.
package geohash

import "math"

// StepMax is the precision of a score: 26 bits per coordinate, 52 in all.
const StepMax = 26

// The coordinates a geo index accepts (GEOADD's "invalid longitude,latitude
// pair" beyond them).
const (
	LatMin  = -85.05112878
	LatMax  = 85.05112878
	LongMin = -180.0
	LongMax = 180.0
)

// These constants live in variables, not Go constants, so that arithmetic
// on them is IEEE double arithmetic as in C (Go folds constant expressions
// exactly). They are never written.
var (
	pi          = math.Pi
	degToRad    = pi / 180.0 // D_R = M_PI / 180.0
	earthRadius = 6372797.560856
	mercatorMax = 20037726.37
)

// Hash is a geohash of Step*2 bits.
type Hash struct {
	Bits uint64
	Step uint8
}

// IsZero reports whether h is the zero Hash (an unused neighbour).
func (h Hash) IsZero() bool { return h.Bits == 0 && h.Step == 0 }

// Range is an interval of longitudes or latitudes.
type Range struct{ Min, Max float64 }

// IsZero reports whether r is the zero Range (not a usable range).
func (r Range) IsZero() bool { return r.Min == 0 && r.Max == 0 }

// Area is a geohash cell.
type Area struct {
	Hash      Hash
	Longitude Range
	Latitude  Range
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

// Encode encodes a position with step bits per coordinate; false
// when the position or the arguments are out of range.
func Encode(lonRange, latRange Range, longitude, latitude float64, step uint8) (Hash, bool) {
	if step > 32 || step == 0 || latRange.IsZero() || lonRange.IsZero() {
		return Hash{}, false
	}
	if longitude > LongMax || longitude < LongMin || latitude > LatMax || latitude < LatMin {
		return Hash{}, false
	}
	if latitude < latRange.Min || latitude > latRange.Max || longitude < lonRange.Min || longitude > lonRange.Max {
		return Hash{Step: step}, false
	}
	latOffset := (latitude - latRange.Min) / (latRange.Max - latRange.Min)
	lonOffset := (longitude - lonRange.Min) / (lonRange.Max - lonRange.Min)
	scale := float64(uint64(1) << step)
	latOffset *= scale
	lonOffset *= scale
	return Hash{Bits: interleave(uint32(latOffset), uint32(lonOffset)), Step: step}, true
}

func coordRanges() (lon, lat Range) {
	return Range{LongMin, LongMax}, Range{LatMin, LatMax}
}

// EncodeWGS84 encodes with Redis's coordinate ranges.
func EncodeWGS84(longitude, latitude float64, step uint8) (Hash, bool) {
	lon, lat := coordRanges()
	return Encode(lon, lat, longitude, latitude, step)
}

// Decode returns the cell of hash.
func Decode(lonRange, latRange Range, hash Hash) (Area, bool) {
	if hash.IsZero() || latRange.IsZero() || lonRange.IsZero() {
		return Area{}, false
	}
	sep := deinterleave(hash.Bits) // [lat][long]
	latScale := latRange.Max - latRange.Min
	lonScale := lonRange.Max - lonRange.Min
	ilato := uint32(sep)
	ilono := uint32(sep >> 32)
	div := float64(uint64(1) << hash.Step)
	return Area{
		Hash: hash,
		Latitude: Range{
			Min: latRange.Min + float64(float64(ilato)/div*latScale),
			Max: latRange.Min + float64(float64(ilato+1)/div*latScale),
		},
		Longitude: Range{
			Min: lonRange.Min + float64(float64(ilono)/div*lonScale),
			Max: lonRange.Min + float64(float64(ilono+1)/div*lonScale),
		},
	}, true
}

// DecodeWGS84 decodes with Redis's coordinate ranges.
func DecodeWGS84(hash Hash) (Area, bool) {
	lon, lat := coordRanges()
	return Decode(lon, lat, hash)
}

// areaCenter is geohashDecodeAreaToLongLat: the cell's centre, clamped
// to the valid ranges.
func areaCenter(a Area) (lon, lat float64) {
	lon = (a.Longitude.Min + a.Longitude.Max) / 2
	lon = min(max(lon, LongMin), LongMax)
	lat = (a.Latitude.Min + a.Latitude.Max) / 2
	lat = min(max(lat, LatMin), LatMax)
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

// DecodeScore is decodeGeohash: the position a score stands for.
func DecodeScore(score float64) (lon, lat float64, ok bool) {
	a, ok := DecodeWGS84(Hash{Bits: scoreToUint64(score), Step: StepMax})
	if !ok {
		return 0, 0, false
	}
	lon, lat = areaCenter(a)
	return lon, lat, true
}

// Align52Bits left-aligns a hash to 52 bits (the score).
func Align52Bits(h Hash) uint64 { return h.Bits << (52 - uint(h.Step)*2) }

// Score encodes a valid position as its sorted set score.
func Score(lon, lat float64) uint64 {
	h, _ := EncodeWGS84(lon, lat, StepMax)
	return Align52Bits(h)
}

// The longitude bits sit in the odd positions, the latitude bits in the
// even ones.
const (
	lonBits = 0xaaaaaaaaaaaaaaaa
	latBits = 0x5555555555555555
)

// moveX moves h one cell east (d > 0) or west (d < 0).
func moveX(h *Hash, d int8) { moveAlong(h, d, lonBits, latBits) }

// moveY moves h one cell north (d > 0) or south (d < 0).
func moveY(h *Hash, d int8) { moveAlong(h, d, latBits, lonBits) }

// moveAlong adds d (±1) to the coordinate whose bits are axis, leaving the
// other's: the bits of the other coordinate (fill) are set in the addend so
// that carries and borrows pass over them.
func moveAlong(h *Hash, d int8, axis, fill uint64) {
	if d == 0 {
		return
	}
	shift := 64 - uint(h.Step)*2
	v := h.Bits & axis
	rest := h.Bits &^ axis
	zz := fill >> shift
	if d > 0 {
		v = v + (zz + 1)
	} else {
		v = v | zz
		v = v - (zz + 1)
	}
	v &= axis >> shift
	h.Bits = v | rest
}

// Neighbors are the eight cells around one, in Redis's field order.
type Neighbors struct {
	North, East, West, South                   Hash
	NorthEast, SouthEast, NorthWest, SouthWest Hash
}

func neighborsOf(h Hash) Neighbors {
	move := func(dx, dy int8) Hash {
		n := h
		moveX(&n, dx)
		moveY(&n, dy)
		return n
	}
	return Neighbors{
		East: move(1, 0), West: move(-1, 0), South: move(0, -1), North: move(0, 1),
		NorthWest: move(-1, 1), NorthEast: move(1, 1), SouthEast: move(1, -1), SouthWest: move(-1, -1),
	}
}

// ---------------------------------------------------------------- search areas

func degRad(ang float64) float64 { return ang * degToRad }
func radDeg(ang float64) float64 { return ang / degToRad }

// estimateStepsByRadius picks the cell size for a search radius.
func estimateStepsByRadius(rangeMeters, lat float64) uint8 {
	if rangeMeters == 0 {
		return 26
	}
	step := 1
	for rangeMeters < mercatorMax {
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

// Shape is a search area: a circle (Radius) or a box (Width, Height), in
// the unit whose size in meters is Conversion, around (Lon, Lat).
type Shape struct {
	Circle        bool
	Lon, Lat      float64
	Conversion    float64
	Radius        float64
	Width, Height float64
	bounds        [4]float64 // min lon, min lat, max lon, max lat (set by AreasByShape)
}

// boundingBox computes the shape's bounding box.
func boundingBox(s *Shape) {
	var height, width float64
	if s.Circle {
		height = s.Conversion * s.Radius
		width = s.Conversion * s.Radius
	} else {
		height = s.Conversion * (s.Height / 2)
		width = s.Conversion * (s.Width / 2)
	}
	latDelta := radDeg(height / earthRadius)
	lonDeltaTop := radDeg(width / earthRadius / cosCR(degRad(s.Lat+latDelta)))
	lonDeltaBottom := radDeg(width / earthRadius / cosCR(degRad(s.Lat-latDelta)))
	// Opposite directions in the two hemispheres.
	if s.Lat < 0 {
		s.bounds[0] = s.Lon - lonDeltaBottom
		s.bounds[2] = s.Lon + lonDeltaBottom
	} else {
		s.bounds[0] = s.Lon - lonDeltaTop
		s.bounds[2] = s.Lon + lonDeltaTop
	}
	s.bounds[1] = s.Lat - latDelta
	s.bounds[3] = s.Lat + latDelta
}

// Areas is the centre cell and the neighbours to search (zero when
// useless).
type Areas struct {
	Hash      Hash
	Area      Area
	Neighbors Neighbors
}

// AreasByShape is geohashCalculateAreasByShapeWGS84.
func AreasByShape(s *Shape) Areas {
	boundingBox(s)
	minLon, minLat, maxLon, maxLat := s.bounds[0], s.bounds[1], s.bounds[2], s.bounds[3]
	var radiusMeters float64
	if s.Circle {
		radiusMeters = s.Radius
	} else {
		radiusMeters = math.Sqrt(float64((s.Width/2)*(s.Width/2)) + float64((s.Height/2)*(s.Height/2)))
	}
	radiusMeters *= s.Conversion

	steps := estimateStepsByRadius(radiusMeters, s.Lat)
	lonR, latR := coordRanges()
	hash, _ := Encode(lonR, latR, s.Lon, s.Lat, steps)
	neighbors := neighborsOf(hash)
	area, _ := Decode(lonR, latR, hash)

	// When the search area is near a cell edge, the estimated step may be
	// too fine for the neighbours to cover it: use one step coarser.
	decrease := false
	north, _ := Decode(lonR, latR, neighbors.North)
	south, _ := Decode(lonR, latR, neighbors.South)
	east, _ := Decode(lonR, latR, neighbors.East)
	west, _ := Decode(lonR, latR, neighbors.West)
	if north.Latitude.Max < maxLat || south.Latitude.Min > minLat ||
		east.Longitude.Max < maxLon || west.Longitude.Min > minLon {
		decrease = true
	}
	if steps > 1 && decrease {
		steps--
		hash, _ = Encode(lonR, latR, s.Lon, s.Lat, steps)
		neighbors = neighborsOf(hash)
		area, _ = Decode(lonR, latR, hash)
	}

	// Drop the neighbours the search area cannot reach.
	if steps >= 2 {
		if area.Latitude.Min < minLat {
			neighbors.South, neighbors.SouthWest, neighbors.SouthEast = Hash{}, Hash{}, Hash{}
		}
		if area.Latitude.Max > maxLat {
			neighbors.North, neighbors.NorthEast, neighbors.NorthWest = Hash{}, Hash{}, Hash{}
		}
		if area.Longitude.Min < minLon {
			neighbors.West, neighbors.SouthWest, neighbors.NorthWest = Hash{}, Hash{}, Hash{}
		}
		if area.Longitude.Max > maxLon {
			neighbors.East, neighbors.SouthEast, neighbors.NorthEast = Hash{}, Hash{}, Hash{}
		}
	}
	return Areas{Hash: hash, Area: area, Neighbors: neighbors}
}

// ---------------------------------------------------------------- distances

// latDistance is the distance between two latitudes on one meridian.
func latDistance(lat1, lat2 float64) float64 {
	return earthRadius * math.Abs(degRad(lat2)-degRad(lat1))
}

// Distance is Redis's haversine great-circle distance in meters.
func Distance(lon1, lat1, lon2, lat2 float64) float64 {
	lon1r := degRad(lon1)
	lon2r := degRad(lon2)
	v := sinCR((lon2r - lon1r) / 2)
	// Same Longitude: the haversine reduces to the latitude difference.
	if v == 0 {
		return latDistance(lat1, lat2)
	}
	lat1r := degRad(lat1)
	lat2r := degRad(lat2)
	u := sinCR((lat2r - lat1r) / 2)
	a := float64(u*u) + float64(float64(float64(cosCR(lat1r)*cosCR(lat2r))*v)*v)
	return 2.0 * earthRadius * asinCR(math.Sqrt(a))
}

// DistanceInRectangle reports whether (x2, y2) lies in the box of
// width and height meters centred on (x1, y1), and its distance.
func DistanceInRectangle(widthM, heightM, x1, y1, x2, y2 float64) (float64, bool) {
	// The latitude distance is cheaper: test it first.
	if latDistance(y2, y1) > heightM/2 {
		return 0, false
	}
	if Distance(x2, y2, x1, y2) > widthM/2 {
		return 0, false
	}
	return Distance(x1, y1, x2, y2), true
}

// Contains reports whether (lon, lat) lies in the shape, and its distance
// in meters from the shape's centre (geoWithinShape).
func (s *Shape) Contains(lon, lat float64) (dist float64, ok bool) {
	if s.Circle {
		dist = Distance(s.Lon, s.Lat, lon, lat)
		return dist, dist <= s.Radius*s.Conversion
	}
	return DistanceInRectangle(s.Width*s.Conversion, s.Height*s.Conversion, s.Lon, s.Lat, lon, lat)
}

// base32Alphabet is the standard geohash base32 alphabet.
const base32Alphabet = "0123456789bcdefghjkmnpqrstuvwxyz"

// Base32 is the 11-character standard geohash string of a position, as
// GEOHASH writes it: re-encoded over latitudes [-90, 90] (not the index's
// Mercator limits), its 52 bits make ten characters and the eleventh is
// taken as zero.
func Base32(lon, lat float64) [11]byte {
	h, _ := Encode(Range{-180, 180}, Range{-90, 90}, lon, lat, StepMax)
	var buf [11]byte
	for i := range buf {
		idx := 0
		if i < 10 {
			idx = int(h.Bits>>(52-(uint(i)+1)*5)) & 0x1f
		}
		buf[i] = base32Alphabet[idx]
	}
	return buf
}
