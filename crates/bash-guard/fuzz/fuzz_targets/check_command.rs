#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    bash_guard::fuzz::check_command(data);
});
