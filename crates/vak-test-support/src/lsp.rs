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
