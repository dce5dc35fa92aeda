package messages

import (
	"encoding/json"
	"testing"
)

// TestID_IsAStringInJSONAndReadsOldNumbers: ids above 2^53 survive JSON as
// strings; records written with numbers still read.
func TestID_IsAStringInJSONAndReadsOldNumbers(t *testing.T) {
	const big = ID(7466367361729949473)
	b, err := json.Marshal(struct {
		S ID `json:"s"`
	}{big})
	if err != nil || string(b) != `{"s":"7466367361729949473"}` {
		t.Fatalf("%s %v", b, err)
	}
	for _, in := range []string{`{"s":"7466367361729949473"}`, `{"s":7466367361729949473}`} {
		var v struct {
			S ID `json:"s"`
		}
		if err := json.Unmarshal([]byte(in), &v); err != nil || v.S != big {
			t.Fatalf("%s: %v %v", in, v.S, err)
		}
	}
	var v struct {
		S ID `json:"s"`
	}
	if err := json.Unmarshal([]byte(`{"s":"12x"}`), &v); err == nil {
		t.Fatal("a malformed id was accepted")
	}
}
