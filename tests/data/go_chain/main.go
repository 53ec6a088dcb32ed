// A known chain for the Go tests: main.main > main.middle x6 > main.leaf,
// busy for argv[1] seconds (default 2). Built stripped by the tests:
// symbols_go_test (names against go tool addr2line) and agent_jit_test.
package main

import (
	"fmt"
	"os"
	"time"
)

//go:noinline
func leaf(n int) int {
	x := 0
	for i := 0; i < n; i++ {
		x = (x*31 + i) % 1000003
	}
	return x
}

//go:noinline
func middle(depth, n int) int {
	if depth == 0 {
		return leaf(n)
	}
	return middle(depth-1, n) + 1
}

func main() {
	seconds := 2.0
	if len(os.Args) > 1 {
		fmt.Sscanf(os.Args[1], "%g", &seconds)
	}
	end := time.Now().Add(time.Duration(seconds * float64(time.Second)))
	s := 0
	for time.Now().Before(end) {
		s += middle(5, 20000)
	}
	fmt.Println("sum", s)
}
