//! Compiling a Lua script without running it, with the same Lua 5.1 the simulated Redis runs
//! scripts on — so a scenario file's script is rejected at load time with the line of its
//! syntax error, not at run time with an `ERR Error compiling script` reply.

use mlua::{ChunkMode, Lua, LuaOptions, StdLib};

/// A Lua syntax error: the 1-based line inside the script and the compiler's message.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("line {line}: {message}")]
pub struct LuaSyntaxError {
    /// The line of the script the compiler stopped at (1 when it does not say).
    pub line: usize,
    /// What the compiler said, without its chunk-name prefix.
    pub message: String,
}

/// Compiles `source` as a Redis script body (text only, no bytecode) and throws it away.
pub fn check_lua_syntax(source: &str) -> Result<(), LuaSyntaxError> {
    let lua = Lua::new_with(StdLib::NONE, LuaOptions::default()).map_err(|e| LuaSyntaxError {
        line: 1,
        message: e.to_string(),
    })?;
    match lua
        .load(source)
        .set_name("=script")
        .set_mode(ChunkMode::Text)
        .into_function()
    {
        Ok(_) => Ok(()),
        Err(e) => Err(parse_error(&e)),
    }
}

/// Checks the commands `source` calls by name (`redis.call("NAME", ...)`, `redis.pcall('NAME',
/// ...)`, any case) against lockstep's command table: a command lockstep's Redis lacks, or one a
/// script may not call (`noscript`), is an error naming its line, so a script lock that could
/// never work is refused at load instead of failing every attempt at run time. Names computed at
/// run time are not checked.
pub fn check_script_commands(source: &str) -> Result<(), LuaSyntaxError> {
    for (line_index, line) in source.lines().enumerate() {
        let mut rest = line;
        while let Some(at) = rest.find("call(") {
            let before = &rest[..at];
            rest = &rest[at + "call(".len()..];
            if !(before.ends_with("redis.") || before.ends_with("redis.p")) {
                continue;
            }
            let args = rest.trim_start();
            let Some(quote) = args.chars().next().filter(|c| *c == '"' || *c == '\'') else {
                continue;
            };
            let Some(end) = args[1..].find(quote) else {
                continue;
            };
            let name = &args[1..1 + end];
            let message = match crate::table::command(name.as_bytes()) {
                None => format!(
                    "the script calls `{name}`, which lockstep's Redis does not have (see docs/redis-commands.md)"
                ),
                Some(spec) if !spec.scriptable() => {
                    format!("the script calls `{name}`, which Redis does not allow from scripts")
                }
                Some(_) => continue,
            };
            return Err(LuaSyntaxError {
                line: line_index + 1,
                message,
            });
        }
    }
    Ok(())
}

/// `script:3: '=' expected near 'x'` → line 3 and the rest.
fn parse_error(error: &mlua::Error) -> LuaSyntaxError {
    let text = match error {
        mlua::Error::SyntaxError { message, .. } => message.clone(),
        other => other.to_string(),
    };
    let first = text.lines().next().unwrap_or_default();
    if let Some(rest) = first.find("script:").map(|i| &first[i + "script:".len()..]) {
        if let Some((line, message)) = rest.split_once(':') {
            if let Ok(line) = line.trim().parse::<usize>() {
                return LuaSyntaxError {
                    line: line.max(1),
                    message: message.trim().to_string(),
                };
            }
        }
    }
    LuaSyntaxError {
        line: 1,
        message: first.trim().to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_good_script_compiles() {
        assert_eq!(
            check_lua_syntax("if redis.call('get', KEYS[1]) == ARGV[1] then\n return 1\nend\nreturn 0"),
            Ok(())
        );
    }

    #[test]
    fn a_syntax_error_names_its_line() {
        let err = check_lua_syntax("local a = 1\nlocal b = = 2\nreturn a").unwrap_err();
        assert_eq!(err.line, 2, "{err:?}");
        assert!(err.message.contains("unexpected symbol"), "{err:?}");
        let err = check_lua_syntax("if true then\nreturn 1\n").unwrap_err();
        assert!(err.line >= 2, "{err:?}");
        assert!(err.message.contains("expected"), "{err:?}");
    }
}
