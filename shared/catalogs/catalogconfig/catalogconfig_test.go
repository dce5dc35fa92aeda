package catalogconfig

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

func TestWithFile_FillsOnlyWhatIsUnset(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), ".iceberg-go.yaml")
	yaml := `catalog:
  prod:
    type: rest
    uri: https://glue.us-east-1.amazonaws.com/iceberg
    warehouse: "123456789012"
    rest:
      sigv4-enabled: true
      signing-name: glue
      signing-region: us-east-1
`
	if err := os.WriteFile(path, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	c, err := Config{Name: "prod", ConfigFile: path, Warehouse: "override"}.WithFile()
	if err != nil {
		t.Fatal(err)
	}
	if c.Type != "rest" || c.URI != "https://glue.us-east-1.amazonaws.com/iceberg" || !c.SigV4 || c.SigningName != "glue" || c.SigningRegion != "us-east-1" {
		t.Fatalf("config %+v", c)
	}
	if c.Warehouse != "override" {
		t.Fatalf("file overrode a set value: %q", c.Warehouse)
	}
	if _, err := (Config{Name: "prod", ConfigFile: filepath.Join(t.TempDir(), "missing.yaml")}).WithFile(); !errors.Is(err, ErrConfig) {
		t.Fatalf("missing explicit file: %v", err)
	}
}

func TestValidate_RejectsIncompleteSettings(t *testing.T) {
	t.Parallel()
	for name, c := range map[string]Config{
		"no type":      {},
		"unknown type": {Type: "dynamodb"},
		"sql no uri":   {Type: "sql"},
		"rest no uri":  {Type: "rest"},
		"hive no uri":  {Type: "hive"},
	} {
		if err := c.Validate(); !errors.Is(err, ErrConfig) {
			t.Errorf("%s: %v, want ErrConfig", name, err)
		}
	}
	if err := (Config{Type: "glue"}).Validate(); err != nil {
		t.Errorf("glue needs no uri: %v", err)
	}
}

func TestParseProperties(t *testing.T) {
	t.Parallel()
	p, err := ParseProperties(" a=1, b = x=y ,, ")
	if err != nil || p["a"] != "1" || p["b"] != "x=y" || len(p) != 2 {
		t.Fatalf("%v %v", p, err)
	}
	if FormatProperties(p) != "a=1,b=x=y" {
		t.Fatalf("format %q", FormatProperties(p))
	}
	if _, err := ParseProperties("=v"); !errors.Is(err, ErrConfig) {
		t.Fatalf("empty key: %v", err)
	}
}
