package messages

import (
	"errors"
	"testing"
)

// FuzzDecode: a task, descriptor, plan or commit request either decodes or
// fails with ErrMalformed; never a panic.
func FuzzDecode(f *testing.F) {
	for _, s := range []string{
		`{"v":1,"job_id":"j","table":"a.b","group":0,"lease_token":1,"pin":{"metadata_location":"s3://b/m.json","snapshot_id":1,"sequence_number":1},"spec_id":0,"scan_tasks":["AA=="]}`,
		`{"v":1,"job_id":"j","group":0,"attempt":"a","spec_id":0,"schema_id":0,"input_paths":["x"],"new_files":[],"counters":{}}`,
		`{"v":1,"job_id":"j","abort":true,"reason":"r","class":"rewrite"}`,
		`{"v":2}`, `[]`, `{"v":1,"group":"x"}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		for _, v := range []any{&Task{}, &Descriptor{}, &Plan{}, &CommitRequest{}, &ScanTaskList{}} {
			if err := Decode(b, v); err != nil && !errors.Is(err, ErrMalformed) {
				t.Fatalf("%T: error %v is not ErrMalformed", v, err)
			}
		}
	})
}

// FuzzTableIdent: a table name parses to levels that join back to it, or
// is rejected with ErrMalformed.
func FuzzTableIdent(f *testing.F) {
	for _, s := range []string{"a.b", "a.b.c", "a", ".a", "a..b", " a.b ", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, name string) {
		ident, err := TableIdent(name)
		if err != nil {
			if !errors.Is(err, ErrMalformed) {
				t.Fatalf("error %v is not ErrMalformed", err)
			}
			return
		}
		if len(ident) < 2 {
			t.Fatalf("%q parsed to %v", name, ident)
		}
		for _, p := range ident {
			if p == "" {
				t.Fatalf("%q parsed to an empty level: %v", name, ident)
			}
		}
	})
}
