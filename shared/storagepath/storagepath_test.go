package storagepath

import (
	"errors"
	"testing"
)

func TestParse_SplitsAsIcebergJavaDoes(t *testing.T) {
	for _, c := range []struct{ in, scheme, authority, path string }{
		{"s3://b/t/data/x.parquet", "s3", "b", "/t/data/x.parquet"},
		{"s3a://b/t/data/x.parquet", "s3", "b", "/t/data/x.parquet"},
		{"S3N://b/t//data/./x.parquet", "s3", "b", "/t/data/x.parquet"},
		{"s3://b", "s3", "b", "/"},
		{"file:///tmp/t/x", "file", "", "/tmp/t/x"},
		{"file:/tmp/t/x", "file", "", "/tmp/t/x"},
		{"/tmp/t/x", "file", "", "/tmp/t/x"},
		{"gs://b/t/x", "gs", "b", "/t/x"},
		{"/tmp/a:b/x", "file", "", "/tmp/a:b/x"},
	} {
		p := Parse(c.in)
		if p.Scheme != c.scheme || p.Authority != c.authority || p.Path != c.path {
			t.Errorf("Parse(%q) = %+v, want %s %s %s", c.in, p, c.scheme, c.authority, c.path)
		}
	}
}

func TestSet_MatchesBySchemeFamilyAndRefusesAMismatch(t *testing.T) {
	s := NewSet()
	s.Add("s3a://b/t/data/live.parquet")
	s.Add("/tmp/t/metadata/v1.metadata.json")
	for _, c := range []struct {
		listed   string
		has      bool
		mismatch bool
	}{
		{"s3://b/t/data/live.parquet", true, false},
		{"s3n://b/t/data/live.parquet", true, false},
		{"s3://b/t/data/other.parquet", false, false},
		{"s3://other/t/data/live.parquet", false, true},
		{"gs://b/t/data/live.parquet", false, true},
		{"file:///tmp/t/metadata/v1.metadata.json", true, false},
		{"s3://b/tmp/t/metadata/v1.metadata.json", false, true},
	} {
		has, err := s.Has(c.listed)
		if has != c.has || errors.Is(err, ErrMismatch) != c.mismatch {
			t.Errorf("Has(%q) = %v, %v; want %v, mismatch %v", c.listed, has, err, c.has, c.mismatch)
		}
		var m *Mismatch
		if c.mismatch && (!errors.As(err, &m) || m.Listed != c.listed || m.Referenced == "") {
			t.Errorf("Has(%q): %v, want a Mismatch naming both", c.listed, err)
		}
	}
}

func TestSame_AReferenceWithoutAuthorityMatchesAny(t *testing.T) {
	if !Same(Parse("file://host/tmp/x"), Parse("file:/tmp/x")) {
		t.Fatal("a reference without an authority should match any")
	}
	if Same(Parse("file:/tmp/x"), Parse("file://host/tmp/x")) {
		t.Fatal("a reference with an authority matched a listing without")
	}
}

func TestWithin_NeedsTheSameFamilyAndAuthority(t *testing.T) {
	for _, c := range []struct {
		loc, p string
		want   bool
	}{
		{"s3://b/t", "s3a://b/t/data/x", true},
		{"s3://b/t", "s3://b/t", true},
		{"s3://b/t/", "s3://b/t", true},
		{"s3://b/t", "s3://b/t2/x", false},
		{"s3://b/t", "s3://c/t/x", false},
		{"file:///w/t", "/w/t/data/x", true},
		{"/w/t", "s3://w/t/x", false},
	} {
		if got := Within(c.loc, c.p); got != c.want {
			t.Errorf("Within(%q, %q) = %v, want %v", c.loc, c.p, got, c.want)
		}
	}
}

func TestSupported_OnlyTheS3FamilyAndLocalFiles(t *testing.T) {
	for _, ok := range []string{"s3://b/t", "s3a://b/t", "s3n://b/t", "file:///w/t", "/w/t"} {
		if err := Supported(ok); err != nil {
			t.Errorf("Supported(%q): %v", ok, err)
		}
	}
	for _, bad := range []string{"gs://b/t", "abfss://c@a.dfs.core.windows.net/t", "hdfs://nn/t"} {
		if err := Supported(bad); !errors.Is(err, ErrUnsupported) {
			t.Errorf("Supported(%q): %v, want ErrUnsupported", bad, err)
		}
	}
}

// TestKey_OneObjectOneKey: the spellings of one object share a key (s3,
// s3a, s3n; a file: URI and its local path; repeated slashes), other
// buckets and other keys do not, and a key is its own key.
func TestKey_OneObjectOneKey(t *testing.T) {
	same := [][]string{
		{"s3://b/t/data/x.parquet", "s3a://b/t/data/x.parquet", "s3n://b/t//data/x.parquet"},
		{"file:///tmp/t/x", "/tmp/t/x", "file:/tmp/t/x"},
	}
	for _, group := range same {
		for _, p := range group {
			if Key(p) != Key(group[0]) {
				t.Errorf("Key(%q) = %q, want %q", p, Key(p), Key(group[0]))
			}
			if Key(Key(p)) != Key(p) {
				t.Errorf("Key(Key(%q)) = %q, want %q", p, Key(Key(p)), Key(p))
			}
		}
	}
	for _, pair := range [][2]string{{"s3://b/t/x", "s3://c/t/x"}, {"s3://b/t/x", "s3://b/t/y"}, {"s3://b/t/x", "gs://b/t/x"}} {
		if Key(pair[0]) == Key(pair[1]) {
			t.Errorf("Key(%q) == Key(%q)", pair[0], pair[1])
		}
	}
}
