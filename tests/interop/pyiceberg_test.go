package interop

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
)

// pyicebergPython is the interpreter of the pinned PyIceberg venv that make
// interop-setup builds (tests/interop/pyiceberg), or "" when it is not
// built and neither make test nor make interop asked for the harness
// (ICEKEEPER_INTEROP unset): then the third opinion is skipped, loudly.
func (w *world) pyicebergPython() string {
	w.t.Helper()
	py, err := filepath.Abs(filepath.Join("pyiceberg", ".venv", "bin", "python"))
	if err == nil {
		if _, err = os.Stat(py); err == nil {
			return py
		}
	}
	if os.Getenv("ICEKEEPER_INTEROP") != "" {
		w.t.Fatalf("PyIceberg is not installed (%v): run make interop-setup", err)
	}
	w.t.Logf("SKIPPED: PyIceberg's reading (not installed: make interop-setup)")
	return ""
}

// pyicebergReading is read.py's answer for one metadata file.
type pyicebergReading struct {
	pyicebergRows
	// Refs are the rows at each branch and tag.
	Refs map[string]pyicebergRows `json:"refs"`
}

// pyicebergRows are PyIceberg's rows at one snapshot, or why it cannot
// read them.
type pyicebergRows struct {
	Columns    []string          `json:"columns"`
	Rows       []json.RawMessage `json:"rows"`
	Unreadable string            `json:"unreadable"`
}

// agreeWithPyIceberg is the third opinion: PyIceberg (pyiceberg/read.py)
// reads the table as the job left it, and the rows at its current snapshot
// and at every branch and tag must be Spark's (after), compared row by row
// on the top-level columns whose JSON both write alike (int, long, string,
// boolean). A table or ref PyIceberg could read before the job and cannot
// after is damage; one it could not read before either (equality deletes,
// which PyIceberg does not apply, or a v3 feature it lacks) is logged, not
// compared.
func (w *world) agreeWithPyIceberg(before string, after reading) []string {
	w.t.Helper()
	py := w.pyicebergPython()
	if py == "" {
		return nil
	}
	now := w.load().MetadataLocation()
	cmd := exec.CommandContext(w.ctx, py, filepath.Join("pyiceberg", "read.py"), before, now)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return []string{fmt.Sprintf("PyIceberg's reader failed: %v: %s", err, stderr.String())}
	}
	var res map[string]pyicebergReading
	if err := json.Unmarshal(out, &res); err != nil {
		return []string{fmt.Sprintf("PyIceberg's reader answered %q: %v", out, err)}
	}
	b, a := res[before], res[now]
	problems := w.samePyIcebergRows("the current snapshot", b.pyicebergRows, a.pyicebergRows, after.current)
	if a.Unreadable != "" {
		return problems
	}
	names := make([]string, 0, len(after.refs))
	for name := range after.refs {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		got, ok := a.Refs[name]
		if !ok {
			problems = append(problems, fmt.Sprintf("PyIceberg does not see ref %s, which Spark reads", name))
			continue
		}
		was, known := b.Refs[name]
		if !known {
			was = pyicebergRows{} // a ref new since the job started: must be readable
		}
		problems = append(problems, w.samePyIcebergRows("ref "+name, was, got, after.refs[name].Rows)...)
	}
	return problems
}

// samePyIcebergRows compares PyIceberg's rows at one snapshot (a, and b
// before the job) with Spark's (spark).
func (w *world) samePyIcebergRows(what string, b, a pyicebergRows, spark []string) []string {
	w.t.Helper()
	switch {
	case a.Unreadable != "" && b.Unreadable == "":
		return []string{fmt.Sprintf("PyIceberg read %s before the job and cannot after: %s", what, a.Unreadable)}
	case a.Unreadable != "":
		w.t.Logf("PyIceberg cannot read %s, before the job either (not compared): %s", what, a.Unreadable)
		return nil
	}
	got := make([]string, 0, len(a.Rows))
	for _, r := range a.Rows {
		got = append(got, projectRow(w, r, a.Columns))
	}
	want := make([]string, 0, len(spark))
	for _, r := range spark {
		want = append(want, projectRow(w, json.RawMessage(r), a.Columns))
	}
	sort.Strings(got)
	sort.Strings(want)
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		return []string{fmt.Sprintf("PyIceberg reads other rows than Spark at %s (on %s): %s", what, strings.Join(a.Columns, ", "), diffRows(want, got))}
	}
	return nil
}

// projectRow is a row's JSON with only columns, numbers as written, nulls
// left out (as Spark's JSON leaves them out), keys sorted.
func projectRow(w *world, raw json.RawMessage, columns []string) string {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var row map[string]any
	if err := dec.Decode(&row); err != nil {
		w.t.Fatalf("row %s: %v", raw, err)
	}
	kept := map[string]any{}
	for _, c := range columns {
		if v, ok := row[c]; ok && v != nil {
			kept[c] = v
		}
	}
	b, err := json.Marshal(kept)
	if err != nil {
		w.t.Fatal(err)
	}
	return string(b)
}
