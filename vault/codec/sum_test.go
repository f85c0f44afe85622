package codec

import (
	"hash/crc32"
	"math/rand/v2"
	"runtime"
	"testing"
)

// combine joins two CRCs as the CRC of the joined bytes, at every length
// of the second part from 0 to a few thousand and at large ones.
func TestCombine(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	buf := make([]byte, 1<<20)
	for i := range buf {
		buf[i] = byte(rng.Uint32())
	}
	lengths := []int{0, 1, 2, 3, 7, 8, 255, 256, 4097, 65536, 1<<20 - 1}
	for range 200 {
		lengths = append(lengths, rng.IntN(5000))
	}
	for _, n := range lengths {
		cut := rng.IntN(len(buf) - n + 1)
		a, b := buf[:cut], buf[cut:cut+n]
		want := crc32.ChecksumIEEE(buf[:cut+n])
		if got := combine(crc32.ChecksumIEEE(a), crc32.ChecksumIEEE(b), n); got != want {
			t.Fatalf("A of %d bytes, B of %d: combined %08x, whole %08x", len(a), n, got, want)
		}
	}
}

// Sum is crc32.ChecksumIEEE, in parts or not, at sizes around every
// number of parts.
func TestSumIsTheCRC(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(8))
	rng := rand.New(rand.NewPCG(3, 4))
	buf := make([]byte, 9*minSumPart+13)
	for i := range buf {
		buf[i] = byte(rng.Uint32())
	}
	for _, n := range []int{0, 1, minSumPart - 1, 2 * minSumPart, 2*minSumPart + 1, 3*minSumPart + 7, len(buf)} {
		if got, want := Sum(buf[:n]), crc32.ChecksumIEEE(buf[:n]); got != want {
			t.Fatalf("%d bytes: Sum %08x, crc32 %08x", n, got, want)
		}
	}
}
