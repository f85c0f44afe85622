package codec

// Sum is the CRC-32 (IEEE) of a block, as hash/crc32 gives it, computed
// in parts at once when the block is large: a recall with vectors checks
// some 80 MB of the vector cache before it searches, which one processor
// does in 4 ms. The parts' sums are joined by the rule that the CRC of
// A‖B is the CRC of A carried over len(B) zero bytes, plus the CRC of B;
// carrying a CRC over n bytes is a multiplication by x^(8n) modulo the
// polynomial (combine).

import (
	"hash/crc32"
	"runtime"
	"sync"
)

// minSumPart is the smallest part Sum computes on its own: below it a
// goroutine costs more than it saves.
const minSumPart = 4 << 20

// Sum is crc32.ChecksumIEEE(b).
func Sum(b []byte) uint32 {
	parts := min(runtime.GOMAXPROCS(0), 8, len(b)/minSumPart)
	if parts < 2 {
		return crc32.ChecksumIEEE(b)
	}
	sums := make([]uint32, parts)
	var wg sync.WaitGroup
	for p := range parts {
		part := b[p*len(b)/parts : (p+1)*len(b)/parts]
		wg.Go(func() { sums[p] = crc32.ChecksumIEEE(part) })
	}
	wg.Wait()
	sum := sums[0]
	for p := 1; p < parts; p++ {
		sum = combine(sum, sums[p], (p+1)*len(b)/parts-p*len(b)/parts)
	}
	return sum
}

// The polynomial's bits as crc32 reads them, lowest degree first: bit 31
// is x^0, bit 30 is x^1.
const poly = crc32.IEEE

// mulMod is a·b modulo the polynomial, both in that order of bits.
func mulMod(a, b uint32) uint32 {
	var p uint32
	for m := uint32(1) << 31; m != 0; m >>= 1 {
		if a&m != 0 {
			p ^= b
		}
		if b&1 != 0 {
			b = b>>1 ^ poly
		} else {
			b >>= 1
		}
	}
	return p
}

// xPow2 is x^(2^k) modulo the polynomial for k = 0 … 63.
var xPow2 = func() (t [64]uint32) {
	t[0] = 1 << 30 // x
	for k := 1; k < len(t); k++ {
		t[k] = mulMod(t[k-1], t[k-1])
	}
	return t
}()

// combine is the CRC-32 of A‖B from a = CRC(A), b = CRC(B) and n =
// len(B) (a slice's length: under 2^60, within xPow2): the pre- and
// post-conditioning of the CRC cancel out, so that it is a carried over n
// zero bytes (a·x^(8n)), plus b.
func combine(a, b uint32, n int) uint32 {
	for k := 3; n > 0; n, k = n>>1, k+1 {
		if n&1 != 0 {
			a = mulMod(xPow2[k], a)
		}
	}
	return a ^ b
}
