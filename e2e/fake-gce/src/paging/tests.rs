use super::PageReq;

#[test]
fn walks_all_pages_without_gaps() {
    let items: Vec<u32> = (0..7).collect();
    let mut token: Option<String> = None;
    let mut seen = Vec::new();
    let mut pages = 0;
    loop {
        let req = PageReq::from_params(Some("3"), token.as_deref()).expect("valid");
        let (page, next) = req.apply(items.clone());
        seen.extend(page);
        pages += 1;
        match next {
            Some(t) => token = Some(t),
            None => break,
        }
    }
    assert_eq!(seen, items);
    assert_eq!(pages, 3);
}

#[test]
fn bad_params_are_invalid() {
    assert!(PageReq::from_params(Some("501"), None).is_err());
    assert!(PageReq::from_params(Some("x"), None).is_err());
    assert!(PageReq::from_params(None, Some("garbage!")).is_err());
    assert_eq!(PageReq::from_params(None, None).map(|r| r.max), Ok(500));
}
