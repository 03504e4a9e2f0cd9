//! The CLI's two kinds of failure and their exit codes.

use argent_interp::RunError;
use std::fmt;

/// Why a command failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CliError {
    /// Something the user can fix: the program, a schedule, an option, a
    /// photo, a parameter value. The text is ready to print (diagnostics
    /// already rendered with their source lines). Exit code 1.
    User(String),
    /// A bug in Argent (malformed IR from the front end, a panic, an
    /// embedded example that does not compile). Exit code 2.
    Internal(String),
}

impl CliError {
    /// The process exit code for this error: 1 for user errors, 2 for
    /// internal errors.
    pub fn exit_code(&self) -> u8 {
        match self {
            CliError::User(_) => 1,
            CliError::Internal(_) => 2,
        }
    }

    /// An internal error describing a caught panic.
    pub fn from_panic(payload: Box<dyn std::any::Any + Send>) -> CliError {
        let message = payload
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| payload.downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "unknown panic".to_string());
        CliError::Internal(format!("panic: {message}"))
    }
}

impl fmt::Display for CliError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CliError::User(message) => write!(f, "{}", message.trim_end()),
            CliError::Internal(message) => write!(
                f,
                "internal error: {}\nThis is a bug in Argent, not in your program; please report it with the command you ran.",
                message.trim_end()
            ),
        }
    }
}

impl From<RunError> for CliError {
    /// Run errors are the user's (bad inputs, parameters, regions, reads
    /// outside an input without a boundary condition, resource limits),
    /// except malformed IR and constructs the reference interpreter cannot
    /// evaluate: a program the front end accepted must run.
    fn from(e: RunError) -> CliError {
        match e {
            RunError::Bug(_) | RunError::Unsupported { .. } => CliError::Internal(e.to_string()),
            other => CliError::User(format!("error: {other}")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use argent_interp::IrBug;

    #[test]
    fn run_errors_map_to_exit_codes() {
        let cases = [
            (RunError::MissingInput { input: "in".into() }, 1),
            (
                RunError::BadParam {
                    param: "amount".into(),
                    message: "5 is above the maximum 4".into(),
                },
                1,
            ),
            (
                RunError::BadRegion {
                    message: "empty".into(),
                },
                1,
            ),
            (
                RunError::ResourceLimit {
                    message: "too deep".into(),
                },
                1,
            ),
            (
                RunError::Unsupported {
                    message: "gpu".into(),
                },
                2,
            ),
            (RunError::Bug(IrBug("unknown func `f`".into())), 2),
        ];
        for (error, code) in cases {
            let text = error.to_string();
            assert_eq!(CliError::from(error).exit_code(), code, "{text}");
        }
    }

    #[test]
    fn panics_become_internal_errors_with_their_message() {
        let payload = std::panic::catch_unwind(|| panic!("boom {}", 7)).unwrap_err();
        let error = CliError::from_panic(payload);
        assert_eq!(error.exit_code(), 2);
        assert!(
            error
                .to_string()
                .starts_with("internal error: panic: boom 7\n"),
            "{error}"
        );
    }
}
