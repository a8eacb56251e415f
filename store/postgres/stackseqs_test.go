package postgres_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/fleetscope/fleetscope/store/index"
	"github.com/fleetscope/fleetscope/store/postgres"
)

// stacksText is a perf script of one sample for each of stacks (frame
// names, leaf first), a second apart from at, plus a comment that makes
// its bytes its own.
func stacksText(at int, tag string, stacks ...[]string) string {
	var b strings.Builder
	for i, st := range stacks {
		fmt.Fprintf(&b, "app 1 [000] %d.000000: 1 cpu-clock:\n", at+i)
		for _, f := range st {
			fmt.Fprintf(&b, "\t1 %s (/bin/app)\n", f)
		}
		b.WriteString("\n")
	}
	return b.String() + "# " + tag + "\n"
}

// listOf is a profile's stored stack list, as numbers, and the number and
// key of each of the tenant's stacks.
func listOf(t *testing.T, c *pgx.Conn, tenant int64, id string) (seqs []int64, keyOf map[int64]int64) {
	t.Helper()
	ctx := context.Background()
	var b []byte
	if err := c.QueryRow(ctx, `SELECT seqs FROM profile_stacks WHERE tenant_id = $1 AND profile_id = $2`, tenant, id).Scan(&b); err != nil {
		t.Fatal(err)
	}
	seqs, err := index.ReadStackList(b)
	if err != nil {
		t.Fatal(err)
	}
	if len(b) > 2*len(seqs)+1 {
		t.Errorf("a list of %d stacks in %d bytes: want at most two a stack here", len(seqs), len(b))
	}
	rows, err := c.Query(ctx, `SELECT seq, id FROM stacks WHERE tenant_id = $1`, tenant)
	if err != nil {
		t.Fatal(err)
	}
	keyOf = map[int64]int64{}
	var seq, key int64
	if _, err := pgx.ForEachRow(rows, []any{&seq, &key}, func() error { keyOf[seq] = key; return nil }); err != nil {
		t.Fatal(err)
	}
	return seqs, keyOf
}

// TestStackNumbers: a profile's stack list holds its stacks' numbers, and
// reads back as their keys, in order, through a warm replica or a cold
// one. A stack the tenant has keeps its number, in a later upload and in
// one through a replica that does not know it; new stacks get new numbers;
// another tenant's same stacks are its own rows, with numbers of their
// own.
func TestStackNumbers(t *testing.T) {
	ctx := context.Background()
	db := newDB(t)
	acme, _ := db.CreateTenant(ctx, "acme", false)
	other, _ := db.CreateTenant(ctx, "other", false)
	c := conn(t, db)
	a, b, d, e := []string{"a", "main"}, []string{"b", "main"}, []string{"d", "b", "main"}, []string{"e", "main"}
	first, _ := store(t, db, acme, "shop", stacksText(100, "first", a, b, a))
	second, _ := store(t, db, acme, "shop", stacksText(200, "second", d, b, e))
	cold, err := postgres.Open(ctx, dbURL(t, db)) // a replica that knows nothing yet
	if err != nil {
		t.Fatal(err)
	}
	defer cold.Close()
	third, _ := store(t, cold, acme, "shop", stacksText(300, "third", e, a))
	theirs, _ := store(t, db, other, "shop", stacksText(100, "first", a, b, a))

	seqs1, keyOf := listOf(t, c, acme, first.ID)
	seqs2, _ := listOf(t, c, acme, second.ID)
	seqs3, _ := listOf(t, c, acme, third.ID)
	if len(keyOf) != 4 || len(seqs1) != 2 || len(seqs2) != 3 || len(seqs3) != 2 {
		t.Fatalf("%d stacks stored, lists of %d, %d and %d: want 4 stacks, lists of 2, 3 and 2", len(keyOf), len(seqs1), len(seqs2), len(seqs3))
	}
	if seqs2[1] != seqs1[1] || seqs3[0] != seqs2[2] || seqs3[1] != seqs1[0] {
		t.Errorf("numbers %v, %v, %v: a stack stored before keeps its number", seqs1, seqs2, seqs3)
	}
	if seqs2[0] <= max(seqs1[0], seqs1[1]) || seqs2[2] != seqs2[0]+1 {
		t.Errorf("numbers %v after %v: new stacks get the next numbers, in order", seqs2, seqs1)
	}
	theirSeqs, theirKeys := listOf(t, c, other, theirs.ID)
	for i, s := range theirSeqs {
		if slices.Contains(seqs1, s) || theirKeys[s] != keyOf[seqs1[i]] {
			t.Errorf("the other tenant's stack %d: number %d, key %d; acme's %d, %d: want the same key under a number of its own", i, s, theirKeys[s], seqs1[i], keyOf[seqs1[i]])
		}
	}
	for _, r := range []*postgres.DB{db, cold} { // warm and cold
		for _, p := range []struct {
			id   string
			seqs []int64
		}{{first.ID, seqs1}, {second.ID, seqs2}, {third.ID, seqs3}} {
			keys, err := r.ProfileStacks(ctx, acme, p.id)
			if err != nil {
				t.Fatal(err)
			}
			want := make([]int64, len(p.seqs))
			for i, s := range p.seqs {
				want[i] = keyOf[s]
			}
			if !slices.Equal(keys, want) {
				t.Errorf("profile %s's stacks: %v, want %v", p.id, keys, want)
			}
		}
		if _, err := r.ProfileStacks(ctx, other, first.ID); err == nil {
			t.Error("another tenant's profile read")
		}
	}
}

// TestConcurrentUploadsShareNumbers: uploads through replicas that know
// nothing, of profiles sharing stacks no one has stored yet, all succeed;
// each stack is stored once, under one number, and every profile's list
// reads back as its keys.
func TestConcurrentUploadsShareNumbers(t *testing.T) {
	ctx := context.Background()
	db := newDB(t)
	acme, _ := db.CreateTenant(ctx, "acme", false)
	var shared [][]string
	for i := range 40 {
		shared = append(shared, []string{fmt.Sprint("s", i), "main"})
	}
	const uploads = 6
	var wg sync.WaitGroup
	ids, errs := make([]string, uploads), make([]error, uploads)
	for u := range uploads {
		r, err := postgres.Open(ctx, dbURL(t, db))
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		wg.Add(1)
		go func() {
			defer wg.Done()
			own := slices.Clone(shared)
			slices.Reverse(own[u*3:]) // in an order of its own
			p, _, err := insertText(r, acme, "shop", stacksText(100, fmt.Sprint("upload ", u), own...), nil)
			if errs[u] = err; err == nil {
				ids[u] = p.ID
			}
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	c := conn(t, db)
	for _, id := range ids {
		seqs, keyOf := listOf(t, c, acme, id)
		if len(keyOf) != len(shared) || len(seqs) != len(shared) {
			t.Fatalf("%d stacks stored, a list of %d: want %d of each", len(keyOf), len(seqs), len(shared))
		}
		keys, err := db.ProfileStacks(ctx, acme, id)
		if err != nil {
			t.Fatal(err)
		}
		for i, s := range seqs {
			if keys[i] != keyOf[s] {
				t.Fatalf("profile %s stack %d: key %d, want %d (number %d)", id, i, keys[i], keyOf[s], s)
			}
		}
	}
}
