package traceevent

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
)

// TestScannerBoundaries: with a tiny read buffer, every value the scanner
// cuts is the value encoding/json finds, whatever falls on a buffer
// boundary (escaped quotes and runs of backslashes especially).
func TestScannerBoundaries(t *testing.T) {
	saved := bufSize
	t.Cleanup(func() { bufSize = saved })
	rnd := rand.New(rand.NewPCG(3, 4))
	pieces := []string{`\\`, `\"`, `"`, `\\\"`, `a`, `{`, `]`, ` `, `\u0041`, `,`}
	var values []string
	for range 300 {
		var b strings.Builder
		for range rnd.IntN(12) {
			b.WriteString(pieces[rnd.IntN(len(pieces))])
		}
		// A string holding the pieces, quoted properly, inside an object.
		s, _ := json.Marshal(b.String())
		values = append(values, fmt.Sprintf(`{"name":%s,"n":[1,{"x":%s}],"z":-1.5e3}`, s, s), string(s), "12", "true")
	}
	in := "[" + strings.Join(values, " ,\n") + "]"
	for _, size := range []int{16, 17, 31, 64, 4096} {
		bufSize = size
		s := newScanner(strings.NewReader(in))
		if err := s.expect('[', "["); err != nil {
			t.Fatal(err)
		}
		dec := json.NewDecoder(strings.NewReader(in))
		dec.Token()
		for i := 0; dec.More(); i++ {
			var want json.RawMessage
			if err := dec.Decode(&want); err != nil {
				t.Fatal(err)
			}
			if i > 0 {
				if err := s.expect(',', ","); err != nil {
					t.Fatalf("size %d, value %d: %v", size, i, err)
				}
			}
			if err := s.value(true); err != nil {
				t.Fatalf("size %d, value %d: %v", size, i, err)
			}
			if !bytes.Equal(s.buf, want) {
				t.Fatalf("size %d, value %d: %s, want %s", size, i, s.buf, want)
			}
		}
	}
}
