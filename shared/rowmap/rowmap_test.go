package rowmap

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/apache/iceberg-go/table/dv"

	"github.com/icekeeper/icekeeper/shared/messages"
)

func positions(ps ...uint64) []byte {
	bm := dv.NewRoaringPositionBitmap()
	for _, p := range ps {
		bm.Set(p)
	}
	b, err := Encode(bm)
	if err != nil {
		panic(err)
	}
	return b
}

// Two inputs, A (5 rows, 1 and 3 dropped) then B (4 rows), written into O1
// (4 rows) then O2 (3 rows): A's survivors 0, 2, 4 are O1's rows 0 to 2,
// B's rows 0 to 3 are O1's row 3 and O2's rows 0 to 2.
func twoInputs(outputs ...Output) Map {
	return Map{Version: messages.FormatVersion, Inputs: []Input{
		{Path: "A", Rows: 5, Dropped: positions(1, 3)},
		{Path: "B", Rows: 4},
	}, Outputs: outputs}
}

func TestLocate_MapsSurvivorsInStreamOrderAndSkipsWhatDeletesNothing(t *testing.T) {
	r, err := Resolve(context.Background(), twoInputs(Output{"O1", 4}, Output{"O2", 3}), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	got, err := r.Locate("A", []int64{4, 0, 1, 2, 9, 2, -1})
	if err != nil {
		t.Fatal(err)
	}
	want := []Located{{"O1", 0}, {"O1", 1}, {"O1", 2}}
	if !slices.Equal(got, want) {
		t.Fatalf("A: %v, want %v (1 was dropped at S, 9 is past its rows)", got, want)
	}
	got, err = r.Locate("B", []int64{0, 1, 3})
	if err != nil {
		t.Fatal(err)
	}
	want = []Located{{"O1", 3}, {"O2", 0}, {"O2", 2}}
	if !slices.Equal(got, want) {
		t.Fatalf("B: %v, want %v", got, want)
	}
	if !r.Dropped("A", 3) || r.Dropped("A", 2) || !r.Dropped("A", 5) {
		t.Fatal("Dropped disagrees with the map")
	}
	if _, err := r.Locate("C", []int64{0}); !errors.Is(err, ErrUnusable) {
		t.Fatalf("a file that is not an input: %v", err)
	}
}

func TestResolve_RefusesAMapThatDoesNotAddUp(t *testing.T) {
	if _, err := Resolve(context.Background(), twoInputs(Output{"O1", 4}, Output{"O2", 2}), nil, nil); !errors.Is(err, ErrUnusable) {
		t.Fatalf("7 surviving rows written as 6: %v", err)
	}
	bad := twoInputs(Output{"O1", 7})
	bad.Inputs[1].Dropped = positions(4) // past B's 4 rows
	if _, err := Resolve(context.Background(), bad, nil, nil); !errors.Is(err, ErrUnusable) {
		t.Fatalf("a dropped position past the file's rows: %v", err)
	}
}
