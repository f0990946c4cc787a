package mcpserver

import (
	"context"
	"fmt"
	"strings"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The tiles of a cat-maze board, as the reference's game draws them: a
// person reads the board in a chat, and a program finds its way by them.
const (
	mazeWall = "⬛"
	mazePath = "🟩"
	mazeCat  = "🐈"
	mazeHome = "🏡"
)

// MazePos is a tile of the board: row 0 is the top, column 0 the left.
type MazePos struct {
	Row int `json:"row"`
	Col int `json:"col"`
}

// MazeState is the game as every cat-maze tool leaves it, the structured
// content of its result (the text content says the same for people).
type MazeState struct {
	// Event says what the call did: "view", "moved", "blocked",
	// "level-complete" (the cat reached home and the next level began),
	// "game-complete" (it reached home on the last level: the run counts
	// and the game is back at level 1) or "restart".
	Event          string  `json:"event"`
	Level          int     `json:"level" jsonschema:"the level now played, from 1"`
	LevelName      string  `json:"levelName"`
	TotalLevels    int     `json:"totalLevels"`
	MovesThisLevel int     `json:"movesThisLevel"`
	TotalMoves     int     `json:"totalMoves"`
	RunsCompleted  int     `json:"runsCompleted" jsonschema:"how often the cat got home on every level"`
	Cat            MazePos `json:"cat"`
	Goal           MazePos `json:"goal"`
	Width          int     `json:"width"`
	Height         int     `json:"height"`
	// Board is the level drawn in tiles, one line a row.
	Board string `json:"board"`
}

// mazeLevel is one level: which tiles are open, where the cat starts and
// where its home is.
type mazeLevel struct {
	name, hint  string
	open        [][]bool // [row][col]
	start, goal MazePos
}

// catMazeLevels are the ten levels, each a maze of cols×rows cells (a board
// of 2·cols+1 by 2·rows+1 tiles) made from its seed: the cat starts at the
// top left and its home is at the bottom right.
var catMazeLevels = []struct {
	name, hint string
	cols, rows int
	seed       uint64
}{
	{"First Pounce", "A short corridor: just follow the green.", 3, 2, 1},
	{"Yarn Trail", "When the path forks, try the way that heads down first.", 4, 3, 2},
	{"Sunny Windowsill", "Dead ends are short here; back out and try the next turn.", 5, 3, 3},
	{"Cardboard Castle", "Home is in the far corner: the path rarely goes straight there.", 5, 4, 4},
	{"Garden Fence", "Keep one paw on the same wall and you will not get lost.", 6, 4, 5},
	{"Laundry Basket", "Long loops ahead: count your moves and stay patient.", 6, 5, 6},
	{"Bookshelf Climb", "The way home may lead back up before it comes down.", 7, 5, 7},
	{"Attic Shadows", "When stuck, view the board and trace the path from home back to the cat.", 7, 6, 8},
	{"Alley Labyrinth", "Many branches, one way through.", 8, 6, 9},
	{"Nine Lives Finale", "The biggest maze: every lesson so far counts.", 8, 7, 10},
}

// mazeRand is splitmix64: a small generator of our own, so that a seed
// makes the same maze on every platform and Go release.
type mazeRand uint64

func (r *mazeRand) intn(n int) int {
	*r += 0x9e3779b97f4a7c15
	z := uint64(*r)
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return int((z ^ (z >> 31)) % uint64(n))
}

// carveMaze makes a perfect maze (exactly one path between any two tiles)
// of cols×rows cells by a depth-first walk from the top-left cell.
func carveMaze(cols, rows int, seed uint64) [][]bool {
	open := make([][]bool, 2*rows+1)
	for r := range open {
		open[r] = make([]bool, 2*cols+1)
	}
	visited := make([][]bool, rows)
	for r := range visited {
		visited[r] = make([]bool, cols)
	}
	rnd := mazeRand(seed)
	type cell struct{ r, c int }
	stack := []cell{{0, 0}}
	visited[0][0] = true
	open[1][1] = true
	for len(stack) > 0 {
		cur := stack[len(stack)-1]
		var next []cell
		for _, d := range [4]cell{{-1, 0}, {1, 0}, {0, -1}, {0, 1}} {
			n := cell{cur.r + d.r, cur.c + d.c}
			if n.r >= 0 && n.r < rows && n.c >= 0 && n.c < cols && !visited[n.r][n.c] {
				next = append(next, n)
			}
		}
		if len(next) == 0 {
			stack = stack[:len(stack)-1]
			continue
		}
		n := next[rnd.intn(len(next))]
		visited[n.r][n.c] = true
		open[2*n.r+1][2*n.c+1] = true
		open[cur.r+n.r+1][cur.c+n.c+1] = true // the wall between them
		stack = append(stack, n)
	}
	return open
}

// catGame is one game: a server's tools share it, whoever calls them.
type catGame struct {
	levels []mazeLevel

	mu                     sync.Mutex
	level                  int // index into levels
	cat                    MazePos
	movesLevel, movesTotal int
	runs                   int
}

func newCatGame() *catGame {
	g := &catGame{}
	for _, l := range catMazeLevels {
		g.levels = append(g.levels, mazeLevel{
			name: l.name, hint: l.hint, open: carveMaze(l.cols, l.rows, l.seed),
			start: MazePos{1, 1}, goal: MazePos{2*l.rows - 1, 2*l.cols - 1},
		})
	}
	g.cat = g.levels[0].start
	return g
}

// board draws the current level with the cat and its home. The caller
// holds g.mu.
func (g *catGame) board() string {
	l := g.levels[g.level]
	var b strings.Builder
	for r, row := range l.open {
		if r > 0 {
			b.WriteByte('\n')
		}
		for c, open := range row {
			switch p := (MazePos{r, c}); {
			case p == g.cat:
				b.WriteString(mazeCat)
			case p == l.goal:
				b.WriteString(mazeHome)
			case open:
				b.WriteString(mazePath)
			default:
				b.WriteString(mazeWall)
			}
		}
	}
	return b.String()
}

// state is the game's state after event. The caller holds g.mu.
func (g *catGame) state(event string) MazeState {
	l := g.levels[g.level]
	return MazeState{
		Event: event, Level: g.level + 1, LevelName: l.name, TotalLevels: len(g.levels),
		MovesThisLevel: g.movesLevel, TotalMoves: g.movesTotal, RunsCompleted: g.runs,
		Cat: g.cat, Goal: l.goal, Width: len(l.open[0]), Height: len(l.open), Board: g.board(),
	}
}

// status is the lines under a board: the counts and the level's hint. The
// caller holds g.mu.
func (g *catGame) status() string {
	return fmt.Sprintf("Moves this level: %d · total moves: %d · runs completed: %d\nHint: %s",
		g.movesLevel, g.movesTotal, g.runs, g.levels[g.level].hint)
}

// heading names the current level. The caller holds g.mu.
func (g *catGame) heading() string {
	return fmt.Sprintf("Level %d/%d: %s", g.level+1, len(g.levels), g.levels[g.level].name)
}

func (g *catGame) view() (string, MazeState) {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.heading() + "\n" + g.board() + "\n" + g.status(), g.state("view")
}

func (g *catGame) restart() (string, MazeState) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.level, g.cat, g.movesLevel, g.movesTotal = 0, g.levels[0].start, 0, 0
	return "Back to the start, moves at zero.\n" + g.heading() + "\n" + g.board() + "\n" + g.status(), g.state("restart")
}

// mazeMoves are the directions the cat moves in, by tool name.
var mazeMoves = map[string]struct {
	dr, dc  int
	compass string
}{
	"up": {-1, 0, "north"}, "down": {1, 0, "south"}, "left": {0, -1, "west"}, "right": {0, 1, "east"},
}

// move moves the cat one tile in dir, unless a wall is in the way. Home
// begins the next level, and home on the last level completes a run and
// begins the game again.
func (g *catGame) move(dir string) (string, MazeState) {
	m := mazeMoves[dir]
	g.mu.Lock()
	defer g.mu.Unlock()
	l := g.levels[g.level]
	to := MazePos{g.cat.Row + m.dr, g.cat.Col + m.dc}
	if to.Row < 0 || to.Row >= len(l.open) || to.Col < 0 || to.Col >= len(l.open[0]) || !l.open[to.Row][to.Col] {
		return fmt.Sprintf("Bump! A wall is %s of the cat (%s); it stays where it is.\n%s\n%s", dir, m.compass, g.board(), g.status()),
			g.state("blocked")
	}
	g.cat = to
	g.movesLevel++
	g.movesTotal++
	if to != l.goal {
		return fmt.Sprintf("The cat moves %s (%s).\n%s\n%s", dir, m.compass, g.board(), g.status()), g.state("moved")
	}
	done := fmt.Sprintf("The cat moves %s (%s) and is home! 🎉 Level %d (%s) done in %d moves.",
		dir, m.compass, g.level+1, l.name, g.movesLevel)
	event := "level-complete"
	if g.level+1 < len(g.levels) {
		g.level++
	} else {
		g.level = 0
		g.runs++
		event = "game-complete"
		done += fmt.Sprintf("\nAll %d levels done in %d moves: that makes %d completed runs. The game starts again.",
			len(g.levels), g.movesTotal, g.runs)
		g.movesTotal = 0
	}
	g.cat, g.movesLevel = g.levels[g.level].start, 0
	return done + "\n\n" + g.heading() + "\n" + g.board() + "\n" + g.status(), g.state(event)
}

// CatMaze returns the cat-maze game: guide the cat (🐈) through ten mazes
// to its home (🏡) with the tools view, up, down, left, right and restart.
// The server holds one game, which every client of it shares. Tool names,
// the tiles and the state's members are those of the reference's cat-maze
// server, so that its players and solvers work with this one.
func CatMaze() *mcp.Server {
	g := newCatGame()
	s := mcp.NewServer(&mcp.Implementation{Name: "mew-cat-maze", Version: Version},
		serverOptions("A maze game: move the cat (🐈) one tile at a time (up, down, left, right) "+
			"through the walkways (🟩) around the walls (⬛) to its home (🏡). Reaching home starts the next of ten levels. "+
			"view shows the board."))
	tool := func(name, desc string, play func() (string, MazeState)) {
		mcp.AddTool(s, &mcp.Tool{Name: name, Description: desc},
			func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, MazeState, error) {
				text, st := play()
				return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: text}}}, st, nil
			})
	}
	tool("view", "Show the maze board with the cat and its home, the level, the moves so far and a hint", g.view)
	for _, dir := range []string{"up", "down", "left", "right"} {
		tool(dir, fmt.Sprintf("Move the cat one tile %s (%s); a wall stops it", dir, mazeMoves[dir].compass),
			func() (string, MazeState) { return g.move(dir) })
	}
	tool("restart", "Restart the game from level 1 with the moves at zero", g.restart)
	return s
}
