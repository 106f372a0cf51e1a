#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    fs_sandbox::fuzz::check_path(data);
});
