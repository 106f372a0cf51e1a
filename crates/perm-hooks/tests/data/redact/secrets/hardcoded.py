import requests

API_KEY = "b9323c5e8d797f09e084520a2d6cba5b"  # TODO move to the vault


def fetch(path):
    return requests.get(f"https://api.acme.test{path}", headers={"X-Api-Key": API_KEY})
