package vault

import (
	"crypto/rand"
	"encoding/binary"
	"strings"
	"time"
)

// Crockford's base32 alphabet, lower case: no i, l, o or u, so ids survive
// being read aloud or retyped.
const crockford = "0123456789abcdefghjkmnpqrstvwxyz"

// NewID returns prefix followed by 26 characters: 48 bits of milliseconds
// since the epoch, then 80 random bits. Ids sort by creation time, and two
// clones of a vault can mint ids independently without ever colliding.
func NewID(prefix string, now time.Time) string {
	var r [10]byte
	if _, err := rand.Read(r[:]); err != nil {
		panic("memvault: no system randomness: " + err.Error())
	}
	return encodeID(prefix, now, r)
}

// derivedID is NewID with the 80 "random" bits taken from a digest of the
// content, for things that must get the same id whenever they are made from
// the same inputs (temporal nodes).
func derivedID(prefix string, t time.Time, digest []byte) string {
	var r [10]byte
	copy(r[:], digest)
	return encodeID(prefix, t, r)
}

func encodeID(prefix string, now time.Time, r [10]byte) string {
	var b [16]byte
	binary.BigEndian.PutUint64(b[:8], uint64(now.UnixMilli())<<16)
	copy(b[6:], r[:])
	var sb strings.Builder
	sb.Grow(len(prefix) + 26)
	sb.WriteString(prefix)
	// 128 bits in 26 five-bit groups: the first group carries the top 3 bits.
	hi := binary.BigEndian.Uint64(b[:8])
	lo := binary.BigEndian.Uint64(b[8:])
	for i := 25; i >= 0; i-- {
		shift := uint(i * 5)
		var v uint64
		switch {
		case shift >= 64:
			v = hi >> (shift - 64)
		case shift > 59:
			v = lo>>shift | hi<<(64-shift)
		default:
			v = lo >> shift
		}
		sb.WriteByte(crockford[v&31])
	}
	return sb.String()
}

// idTime recovers the creation time embedded in an id made by NewID.
func idTime(id string) (time.Time, bool) {
	i := strings.IndexByte(id, '_')
	if i < 0 || len(id)-i-1 != 26 {
		return time.Time{}, false
	}
	var ms uint64
	// The first 10 groups hold 50 bits: 2 bits of zero padding above the
	// 48 bits of milliseconds.
	for _, c := range id[i+1 : i+11] {
		k := strings.IndexRune(crockford, c)
		if k < 0 {
			return time.Time{}, false
		}
		ms = ms<<5 | uint64(k)
	}
	return time.UnixMilli(int64(ms)), true
}
