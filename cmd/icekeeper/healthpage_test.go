package main

import (
	"context"
	"fmt"
	"image"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/apache/iceberg-go/table"

	"github.com/icekeeper/icekeeper/shared/harness/sampletable"
	"github.com/icekeeper/icekeeper/shared/healthpage"
)

// chromium finds Debian's Chromium (.ci/run installs it).
func chromium(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	t.Skip("Chromium is not installed (.ci/run installs Debian's chromium)")
	return ""
}

// screenshot renders page in headless Chromium and decodes the PNG. The
// flags keep Chromium off the network, which this machine closes.
func screenshot(t *testing.T, browser, page string) image.Image {
	t.Helper()
	dir := t.TempDir()
	shot := filepath.Join(dir, "shot.png")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, browser, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
		"--disable-background-networking", "--disable-component-update", "--disable-sync", "--hide-scrollbars",
		"--user-data-dir="+filepath.Join(dir, "profile"), "--window-size=1200,2400", "--screenshot="+shot, "file://"+page)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("chromium: %v\n%s", err, out)
	}
	f, err := os.Open(shot)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatal(err)
	}
	return img
}

// pixels counts the pixels of img within 8 of colour (#rrggbb) in each
// channel.
func pixels(img image.Image, colour string) int {
	var r0, g0, b0 int
	fmt.Sscanf(colour, "#%02x%02x%02x", &r0, &g0, &b0)
	near := func(a uint32, b int) bool { d := int(a>>8) - b; return d >= -8 && d <= 8 }
	n := 0
	bounds := img.Bounds()
	for y := bounds.Min.Y; y < bounds.Max.Y; y++ {
		for x := bounds.Min.X; x < bounds.Max.X; x++ {
			r, g, b, _ := img.At(x, y).RGBA()
			if near(r, r0) && near(g, g0) && near(b, b0) {
				n++
			}
		}
	}
	return n
}

// TestHealth_HTMLPageRendersItsCharts: `health --html` on a table with
// small files and every kind of delete, then again after `compact`. Each
// page is opened in headless Chromium and the screenshot must show the
// charts: the file-size histograms and the history line (data colour), the
// deletes per partition before compaction (position, DV and equality
// colours), and the compaction's marker after it, with the before-and-after
// table. The page loads nothing from anywhere.
func TestHealth_HTMLPageRendersItsCharts(t *testing.T) {
	if testing.Short() {
		t.Skip("runs Chromium")
	}
	browser := chromium(t)
	cat, uri, wh := localSQLCatalog(t, "")
	ident := table.Identifier{"shop", "orders"}
	// v2 position deletes and equality deletes in two partitions, and a v3
	// table's deletion vectors in a third namespace's table.
	if _, err := sampletable.Create(context.Background(), cat, ident, sampletable.Options{FormatVersion: 2, Partitions: 2, Files: 8, RowsPerFile: 50, PositionDeletes: true, EqualityDeletes: true}); err != nil {
		t.Fatal(err)
	}
	if _, err := sampletable.Create(context.Background(), cat, table.Identifier{"shop", "events"}, sampletable.Options{FormatVersion: 3, Partitions: 2, Files: 8, RowsPerFile: 50, PositionDeletes: true}); err != nil {
		t.Fatal(err)
	}
	flags := []string{"--catalog", "sql", "--catalog-name", "local", "--uri", uri, "--warehouse", wh}
	dir := t.TempDir()
	page := func(name, file string) (string, image.Image) {
		t.Helper()
		path := filepath.Join(dir, file)
		if _, err := runCLI(t, append([]string{"health", name, "--html", path}, flags...)...); err != nil {
			t.Fatal(err)
		}
		html, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		for _, ref := range []string{"<script", "<link", "<img", "src=", "http://", "https://"} {
			if strings.Contains(string(html), ref) {
				t.Errorf("%s loads something (%q)", file, ref)
			}
		}
		return string(html), screenshot(t, browser, path)
	}
	atLeast := func(what string, img image.Image, colour string, n int) {
		t.Helper()
		if got := pixels(img, colour); got < n {
			t.Errorf("%s: %d pixels of %s, want at least %d: the chart did not render", what, got, colour, n)
		}
	}

	// Thresholds: a histogram bar of a partition's files is about 2,200
	// pixels, a history line about 2,500, a legend swatch 100.
	beforeHTML, before := page("shop.orders", "before.html")
	atLeast("file-size histograms", before, healthpage.ColourData, 4000)
	atLeast("position deletes", before, healthpage.ColourPosition, 300)
	atLeast("equality deletes", before, healthpage.ColourEquality, 300)
	atLeast("data files over the snapshots", before, healthpage.ColourDataLine, 1000)
	atLeast("delete files over the snapshots", before, healthpage.ColourDeleteLine, 300)
	atLeast("data manifests", before, healthpage.ColourDataManifests, 1000)
	atLeast("delete manifests", before, healthpage.ColourDeleteManifests, 1000)
	_, events := page("shop.events", "events.html")
	atLeast("deletion vectors", events, healthpage.ColourDV, 300)

	if _, err := runCLI(t, append([]string{"compact", "shop.orders", "--local", "-q"}, flags...)...); err != nil {
		t.Fatal(err)
	}
	html, after := page("shop.orders", "after.html")
	atLeast("file-size histograms after", after, healthpage.ColourData, 4000)
	atLeast("data files over the snapshots after", after, healthpage.ColourDataLine, 1000)
	// The legend shows the marker's colour on both pages; the marker
	// itself (a circle of radius 7) only after the compaction.
	if marker := pixels(after, healthpage.ColourCompacted) - pixels(before, healthpage.ColourCompacted); marker < 50 {
		t.Errorf("the compaction's marker: %d more pixels of %s after it, want at least 50", marker, healthpage.ColourCompacted)
	}
	if !strings.Contains(html, `id="before-after"`) || strings.Contains(beforeHTML, `id="before-after"`) {
		t.Error("the before-and-after table belongs to the page after compaction only")
	}
	if !strings.Contains(beforeHTML, "<h2>Pruning</h2>") || !strings.Contains(beforeHTML, "<td>region (one value)</td>") {
		t.Error("the page lacks the pruning table (column overlap)")
	}
}
