package transcript

import "testing"

func BenchmarkParseFixtures(b *testing.B) {
	for _, tc := range fixtureCases {
		data := readFixture(b, tc.file)
		b.Run(string(tc.format), func(b *testing.B) {
			b.SetBytes(int64(len(data)))
			for b.Loop() {
				if _, err := ParseBytes(tc.format, data, Cursor{}, Options{}); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(string(tc.format)+"/no-redact", func(b *testing.B) {
			b.SetBytes(int64(len(data)))
			for b.Loop() {
				if _, err := ParseBytes(tc.format, data, Cursor{}, Options{NoRedact: true}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
