//! The scenarios run against real language servers (pyright, typescript-language-server,
//! clangd): a type error appears in a change's result, fixing it clears it, and a change that
//! breaks an open importer reports the importer. The same scenarios run through vak-tool-lsp's
//! own small file tools and through the facade's `edit` and `write` ([`Changes`] carries them).

use std::future::Future;

/// The servers vak-tool-lsp knows by name: a scenario turns off all but its own.
pub const SERVERS: [&str; 6] = [
    "rust-analyzer",
    "pyright",
    "typescript",
    "clangd",
    "gopls",
    "ruff",
];

/// The tools a scenario changes files with: each call's result text (a failed call fails the
/// test).
pub trait Changes {
    /// Writes `content` to `path`.
    fn write(&self, path: &str, content: &str) -> impl Future<Output = String>;
    /// Replaces `old` with `new` in `path`.
    fn edit(&self, path: &str, old: &str, new: &str) -> impl Future<Output = String>;
    /// Calls `diagnostics` with no arguments.
    fn diagnostics(&self) -> impl Future<Output = String>;
}

/// The navigation tool a scenario asks (`code` with its arguments as JSON text: the result's
/// text and whether it is an error), `diagnostics` of one file, and files put in place without
/// a tool (as the person's editor or a checkout would).
pub trait Navigate {
    /// Calls `code` with `args` (a JSON object's text).
    fn code(&self, args: &str) -> impl Future<Output = (bool, String)>;
    /// Calls `diagnostics` with `path`.
    fn diagnostics_of(&self, path: &str) -> impl Future<Output = String>;
    /// Writes `content` to `path` in the workspace, telling no tool.
    fn place(&self, path: &str, content: &str);
}

/// `code` with `args`, which must succeed.
async fn ok(tools: &impl Navigate, args: &str) -> String {
    let (error, text) = tools.code(args).await;
    assert!(!error, "{args}: {text}");
    text
}

/// The servers a scenario needs: its name in the settings and the program on `PATH`.
#[derive(Debug, Clone, Copy)]
pub struct Server {
    /// The server's name in `[lsp.servers]`.
    pub name: &'static str,
    /// The program that must be on `PATH`.
    pub program: &'static str,
}

/// pyright.
pub const PYRIGHT: Server = Server {
    name: "pyright",
    program: "pyright-langserver",
};
/// basedpyright, run as the `pyright` server (the built-in's second choice).
pub const BASEDPYRIGHT: Server = Server {
    name: "pyright",
    program: "basedpyright-langserver",
};
/// ruff's language server (`ruff server`).
pub const RUFF: Server = Server {
    name: "ruff",
    program: "ruff",
};
/// typescript-language-server.
pub const TYPESCRIPT: Server = Server {
    name: "typescript",
    program: "typescript-language-server",
};
/// clangd.
pub const CLANGD: Server = Server {
    name: "clangd",
    program: "clangd",
};

impl Server {
    /// Whether its program is installed; missing, the test fails under CI and is skipped
    /// elsewhere (`cargo xtask ci` installs it).
    #[must_use]
    pub fn installed_or_skip(self) -> bool {
        crate::skip::program_or_skip(self.program)
    }

    /// The other servers, which a scenario turns off.
    pub fn others(self) -> impl Iterator<Item = &'static str> {
        SERVERS.into_iter().filter(move |name| *name != self.name)
    }
}

/// A Python type error appears, clears, and reaches the importer when the import breaks.
pub async fn python(tools: &impl Changes) {
    let lib = "def greet(name: str) -> str:\n    return \"hi \" + name\n";
    let text = tools.write("lib.py", lib).await;
    assert!(text.contains("lib.py: no problems (pyright)"), "{text}");
    let text = tools
        .write(
            "main.py",
            "from lib import greet\n\nx: int = greet(\"a\")\n",
        )
        .await;
    assert!(
        text.contains("main.py: 1 error, 0 warnings (pyright)"),
        "{text}"
    );
    assert!(
        text.contains("main.py:3:10: error [Pyright reportAssignmentType]"),
        "{text}"
    );
    let text = tools.edit("main.py", "x: int", "x: str").await;
    assert!(text.contains("main.py: no problems (pyright)"), "{text}");
    let text = tools.edit("lib.py", "def greet(", "def welcome(").await;
    assert!(text.contains("lib.py: no problems (pyright)"), "{text}");
    assert!(
        text.contains("main.py: 1 new error in a file this change broke (pyright)"),
        "{text}"
    );
    assert!(
        text.contains("\"greet\" is unknown import symbol"),
        "{text}"
    );
    let text = tools.diagnostics().await;
    assert!(
        text.contains("main.py: 1 error, 0 warnings (pyright)"),
        "{text}"
    );
}

/// A TypeScript type error appears, clears, and reaches the importer when the export breaks.
pub async fn typescript(tools: &impl Changes) {
    let lib = "export function greet(name: string): string {\n  return \"hi \" + name;\n}\n";
    let text = tools.write("lib.ts", lib).await;
    assert!(text.contains("lib.ts: no problems (typescript)"), "{text}");
    let main = "import { greet } from \"./lib\";\n\nexport const n: number = greet(\"a\");\n";
    let text = tools.write("main.ts", main).await;
    assert!(
        text.contains("main.ts: 1 error, 0 warnings (typescript)"),
        "{text}"
    );
    assert!(
        text.contains("main.ts:3:14: error [typescript 2322]"),
        "{text}"
    );
    let text = tools.edit("main.ts", "n: number", "n: string").await;
    assert!(text.contains("main.ts: no problems (typescript)"), "{text}");
    let text = tools
        .edit("lib.ts", "function greet(", "function welcome(")
        .await;
    assert!(text.contains("lib.ts: no problems (typescript)"), "{text}");
    assert!(
        text.contains("main.ts: 1 new error in a file this change broke (typescript)"),
        "{text}"
    );
    assert!(text.contains("greet"), "{text}");
}

/// A C error appears, clears, and reaches the includer when the header breaks.
pub async fn c(tools: &impl Changes) {
    let header = "struct point { int x; int y; };\n";
    let text = tools.write("point.h", header).await;
    assert!(text.contains("point.h: no problems (clangd)"), "{text}");
    let main = "#include \"point.h\"\n\nint main(void) {\n  struct point p = {1, 2};\n  return p.y * \"s\";\n}\n";
    let text = tools.write("main.c", main).await;
    assert!(text.contains("main.c: 1 error"), "{text}");
    assert!(text.contains("main.c:5:14: error [clang"), "{text}");
    let text = tools.edit("main.c", "p.y * \"s\"", "p.y").await;
    assert!(text.contains("main.c: no problems (clangd)"), "{text}");
    let text = tools.edit("point.h", "int y;", "int z;").await;
    assert!(
        text.contains("main.c: 1 new error in a file this change broke (clangd)"),
        "{text}"
    );
    assert!(text.contains("No member named 'y'"), "{text}");
}

const PY_LIB: &str = "class Greeter:\n    def greet(self, name: str) -> str:\n        return \"hi \" + name\n\n\ndef double(x: int) -> int:\n    return x * 2\n";
const PY_MAIN: &str = "from lib import Greeter, double\n\n\ndef run() -> int:\n    g = Greeter()\n    g.greet(\"a\")\n    return double(2) + double(3)\n";

/// Every `code` operation pyright offers, on a two-file project.
pub async fn python_navigation(tools: &(impl Changes + Navigate)) {
    tools.write("lib.py", PY_LIB).await;
    tools.write("main.py", PY_MAIN).await;
    let text = ok(
        tools,
        r#"{"op":"definition","path":"main.py","line":7,"symbol":"double(2"}"#,
    )
    .await;
    assert!(
        text.contains("lib.py:6:5: def double(x: int) -> int:"),
        "{text}"
    );
    let text = ok(
        tools,
        r#"{"op":"type_definition","path":"main.py","line":5,"symbol":"g"}"#,
    )
    .await;
    assert!(text.contains("lib.py:1:7: class Greeter:"), "{text}");
    let text = ok(
        tools,
        r#"{"op":"references","path":"lib.py","line":6,"symbol":"double"}"#,
    )
    .await;
    assert!(
        text.starts_with("references to `double` at lib.py:6:5: 4 references in 2 files (pyright); 4 shown, 0 left out"),
        "{text}"
    );
    assert!(text.contains("main.py (3 locations)"), "{text}");
    assert!(
        text.contains("main.py:7:24:     return double(2) + double(3)"),
        "{text}"
    );
    let text = ok(
        tools,
        r#"{"op":"hover","path":"main.py","line":7,"symbol":"double(3"}"#,
    )
    .await;
    assert!(text.contains("def double(x: int) -> int"), "{text}");
    let text = ok(tools, r#"{"op":"document_symbols","path":"lib.py"}"#).await;
    assert!(text.contains("lib.py:1:7: class Greeter"), "{text}");
    assert!(text.contains("lib.py:2:9:   method greet"), "{text}");
    assert!(text.contains("lib.py:6:5: function double"), "{text}");
    let text = ok(
        tools,
        r#"{"op":"workspace_symbols","path":"main.py","query":"Greeter"}"#,
    )
    .await;
    assert!(text.contains("lib.py:1:7: class Greeter:"), "{text}");
    let text = ok(
        tools,
        r#"{"op":"incoming_calls","path":"lib.py","line":6,"symbol":"double"}"#,
    )
    .await;
    assert!(
        text.contains("main.py:7:12:     return double(2) + double(3)  (in `run`)"),
        "{text}"
    );
    let text = ok(
        tools,
        r#"{"op":"outgoing_calls","path":"main.py","line":4,"symbol":"run"}"#,
    )
    .await;
    assert!(
        text.contains("lib.py:6:5: def double(x: int) -> int:  (`double`, called on line 7, 7)"),
        "{text}"
    );
    let (error, text) = tools
        .code(r#"{"op":"definition","path":"main.py","line":7,"symbol":"double"}"#)
        .await;
    assert!(error, "{text}");
    assert!(
        text.contains("`double` appears 2 times on line 7 (columns 12, 24)"),
        "{text}"
    );
    assert!(
        text.contains("main.py:7:     return double(2) + double(3)"),
        "{text}"
    );
}

/// `code` with typescript-language-server, implementations included.
pub async fn typescript_navigation(tools: &(impl Changes + Navigate)) {
    tools
        .write(
            "shape.ts",
            "export interface Shape {\n  area(): number;\n}\n\nexport class Square implements Shape {\n  constructor(private side: number) {}\n  area(): number {\n    return this.side * this.side;\n  }\n}\n",
        )
        .await;
    tools
        .write(
            "main.ts",
            "import { Shape, Square } from \"./shape\";\n\nexport function total(shapes: Shape[]): number {\n  return shapes.reduce((sum, s) => sum + s.area(), 0);\n}\n\nexport const t = total([new Square(2)]);\n",
        )
        .await;
    let text = ok(
        tools,
        r#"{"op":"definition","path":"main.ts","line":7,"symbol":"Square"}"#,
    )
    .await;
    assert!(
        text.contains("shape.ts:5:14: export class Square implements Shape {"),
        "{text}"
    );
    let text = ok(
        tools,
        r#"{"op":"implementation","path":"shape.ts","line":1,"symbol":"Shape"}"#,
    )
    .await;
    assert!(
        text.contains("shape.ts:5:14: export class Square implements Shape {"),
        "{text}"
    );
    let text = ok(
        tools,
        r#"{"op":"references","path":"main.ts","line":3,"symbol":"total"}"#,
    )
    .await;
    assert!(
        text.contains("2 references in 1 file (typescript)"),
        "{text}"
    );
    let text = ok(
        tools,
        r#"{"op":"hover","path":"main.ts","line":7,"symbol":"total("}"#,
    )
    .await;
    assert!(
        text.contains("function total(shapes: Shape[]): number"),
        "{text}"
    );
    let text = ok(tools, r#"{"op":"document_symbols","path":"shape.ts"}"#).await;
    assert!(text.contains("shape.ts:5:14: class Square"), "{text}");
    let text = ok(
        tools,
        r#"{"op":"workspace_symbols","path":"main.ts","query":"Square"}"#,
    )
    .await;
    assert!(
        text.contains("shape.ts:5:1: export class Square implements Shape {  (class Square)"),
        "{text}"
    );
    let text = ok(
        tools,
        r#"{"op":"incoming_calls","path":"main.ts","line":3,"symbol":"total"}"#,
    )
    .await;
    assert!(
        text.contains("main.ts:7:18: export const t = total([new Square(2)]);"),
        "{text}"
    );
}

/// `code` with clangd on a header and its includer.
pub async fn c_navigation(tools: &(impl Changes + Navigate)) {
    tools
        .write(
            "point.h",
            "struct point { int x; int y; };\nint norm(struct point p);\n",
        )
        .await;
    tools
        .write(
            "main.c",
            "#include \"point.h\"\n\nint norm(struct point p) { return p.x + p.y; }\n\nint main(void) {\n  struct point p = {1, 2};\n  return norm(p);\n}\n",
        )
        .await;
    let text = ok(
        tools,
        r#"{"op":"type_definition","path":"main.c","line":6,"symbol":"p ="}"#,
    )
    .await;
    assert!(text.contains("point.h:1:8: struct point"), "{text}");
    let text = ok(
        tools,
        r#"{"op":"references","path":"main.c","line":7,"symbol":"norm"}"#,
    )
    .await;
    assert!(
        text.contains("main.c:3:5: int norm(struct point p)"),
        "{text}"
    );
    assert!(text.contains("main.c:7:10:   return norm(p);"), "{text}");
    let text = ok(tools, r#"{"op":"document_symbols","path":"main.c"}"#).await;
    assert!(text.contains("main.c:5:5: function main"), "{text}");
    let text = ok(
        tools,
        r#"{"op":"incoming_calls","path":"main.c","line":3,"symbol":"norm"}"#,
    )
    .await;
    assert!(
        text.contains("main.c:7:10:   return norm(p);  (in `main`)"),
        "{text}"
    );
    // Debian's clangd has no outgoing calls: the error names the op and what to do instead.
    let (error, text) = tools
        .code(r#"{"op":"outgoing_calls","path":"main.c","line":5,"symbol":"main"}"#)
        .await;
    if error {
        assert!(
            text.contains("clangd does not offer `outgoing_calls`"),
            "{text}"
        );
    } else {
        assert!(text.contains("`norm`, called on line 7"), "{text}");
    }
}

/// A change reaches the files that import it, and `diagnostics` of such a file never answers
/// from a report older than the change: `main.py` imports `double` from `lib.py` and has been
/// diagnosed; renaming `double` lists `main.py`'s new error in the change's result, and
/// `diagnostics` of `main.py` then reports it.
pub async fn python_dependents(tools: &(impl Changes + Navigate)) {
    tools.place("lib.py", "def double(x: int) -> int:\n    return x * 2\n");
    tools.place("main.py", "from lib import double\n\nprint(double(2))\n");
    let text = tools.diagnostics_of("main.py").await;
    assert!(text.contains("main.py: no problems (pyright)"), "{text}");
    let text = tools.edit("lib.py", "def double(", "def twice(").await;
    assert!(text.contains("lib.py: no problems (pyright)"), "{text}");
    assert!(
        text.contains("main.py: 1 new error in a file this change broke (pyright)"),
        "{text}"
    );
    assert!(
        text.contains("\"double\" is unknown import symbol"),
        "{text}"
    );
    // (basedpyright, which may stand in for pyright, adds warnings of its own.)
    let text = tools.diagnostics_of("main.py").await;
    assert!(text.contains("main.py: 1 error, "), "{text}");
    assert!(
        text.contains("\"double\" is unknown import symbol"),
        "{text}"
    );
    // A file that imports the changed one without being open in the server is checked too.
    tools.place("other.py", "from lib import twice\n\nprint(twice(2))\n");
    let text = tools.edit("lib.py", "def twice(", "def triple(").await;
    assert!(
        text.contains(
            "other.py: 1 error in a file that imports this change, checked now for the first \
             time (pyright)"
        ),
        "{text}"
    );
    assert!(
        text.contains("\"twice\" is unknown import symbol"),
        "{text}"
    );
}

/// The `rename` tool a scenario calls (its arguments as JSON text: the result's text and
/// whether it is an error), and a file of the workspace read back.
pub trait Renames {
    /// Calls `rename` with `args` (a JSON object's text).
    fn rename(&self, args: &str) -> impl Future<Output = (bool, String)>;
    /// The content of `path` in the workspace.
    fn read(&self, path: &str) -> String;
}

/// pyright renames a function across its module and an importer: every file written (the
/// writer's report in the result), the diagnostics of both after it, and `diagnostics` of the importer clean after it; a name that is
/// not the project's writes nothing.
pub async fn python_rename(tools: &(impl Changes + Navigate + Renames)) {
    tools.write("lib.py", PY_LIB).await;
    tools.write("main.py", PY_MAIN).await;
    let (error, text) = tools
        .rename(r#"{"path":"lib.py","line":6,"symbol":"double","new_name":"twice"}"#)
        .await;
    assert!(!error, "{text}");
    assert!(
        text.starts_with(
            "Renamed `double` at lib.py:6:5 to `twice` (pyright): 4 edits in 2 files."
        ),
        "{text}"
    );
    assert!(text.contains("lib.py: no problems (pyright)"), "{text}");
    assert!(text.contains("main.py: no problems (pyright)"), "{text}");
    assert!(tools.read("lib.py").contains("def twice(x: int) -> int:"));
    assert!(
        tools
            .read("main.py")
            .starts_with("from lib import Greeter, twice\n")
    );
    let text = tools.diagnostics_of("main.py").await;
    assert!(text.contains("main.py: no problems (pyright)"), "{text}");
    // `print` is the standard library's: pyright refuses, nothing is written.
    tools.write("use.py", "print(1)\n").await;
    let (error, text) = tools
        .rename(r#"{"path":"use.py","line":1,"symbol":"print","new_name":"show"}"#)
        .await;
    assert!(error, "{text}");
    assert!(text.contains("nothing was written"), "{text}");
    assert_eq!(tools.read("use.py"), "print(1)\n");
}

/// typescript-language-server renames an exported function at its definition, across its
/// importer. (It publishes a file's diagnostics only when they change, so none are asserted.)
pub async fn typescript_rename(tools: &(impl Changes + Navigate + Renames)) {
    let lib = "export function greet(name: string): string {\n  return \"hi \" + name;\n}\n";
    tools.write("lib.ts", lib).await;
    let main = "import { greet } from \"./lib\";\n\nexport const s: string = greet(\"a\");\n";
    tools.write("main.ts", main).await;
    let (error, text) = tools
        .rename(r#"{"path":"lib.ts","line":1,"symbol":"greet","new_name":"welcome"}"#)
        .await;
    assert!(!error, "{text}");
    assert!(
        text.starts_with(
            "Renamed `greet` at lib.ts:1:17 to `welcome` (typescript): 3 edits in 2 files."
        ),
        "{text}"
    );
    assert!(tools.read("lib.ts").starts_with("export function welcome("));
    assert_eq!(
        tools.read("main.ts"),
        "import { welcome } from \"./lib\";\n\nexport const s: string = welcome(\"a\");\n"
    );
}

/// ruff (`ruff server`): a lint appears in a change's result, and removing its cause clears it.
pub async fn ruff(tools: &impl Changes) {
    let text = tools.write("a.py", "import os\n\nprint(1)\n").await;
    assert!(text.contains("a.py: "), "{text}");
    assert!(text.contains("a.py:1:8: "), "{text}");
    assert!(text.contains("F401"), "{text}");
    let text = tools.edit("a.py", "import os\n\n", "").await;
    assert!(text.contains("a.py: no problems (ruff)"), "{text}");
}
