package events

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// FuzzDecode: any input decodes to a trigger or is rejected with
// ErrRejected; it never panics, and a decoded trigger names only
// well-formed tables. The samples are the seed corpus.
func FuzzDecode(f *testing.F) {
	files, _ := filepath.Glob("*.json")
	for _, name := range files {
		if b, err := os.ReadFile(name); err == nil {
			f.Add(b)
		}
	}
	f.Add([]byte(`{"source":"aws.glue","detail-type":"Glue Data Catalog Table State Change","detail":{"databaseName":"a","tableName":"b","typeOfChange":"UpdateTable"}}`))
	f.Add([]byte(`{}`))
	f.Fuzz(func(t *testing.T, raw []byte) {
		trig, err := Decode(raw)
		if err != nil {
			if !errors.Is(err, ErrRejected) {
				t.Fatalf("error %v is not ErrRejected", err)
			}
			return
		}
		for _, name := range trig.Tables {
			if name == "" || name[0] == '.' || name[len(name)-1] == '.' {
				t.Fatalf("decoded a malformed table name %q from %q", name, raw)
			}
		}
	})
}
