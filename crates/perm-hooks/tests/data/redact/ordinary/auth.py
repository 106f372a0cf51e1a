"""Login views."""
import os

from django import forms
from django.contrib.auth.hashers import check_password

SECRET_KEY = os.environ["SECRET_KEY"]
PASSWORD_HASHERS = ["django.contrib.auth.hashers.Argon2PasswordHasher"]


class LoginForm(forms.Form):
    username = forms.CharField(max_length=150)
    password_field = forms.CharField(widget=forms.PasswordInput)
    password = forms.CharField(label="Password", widget=forms.PasswordInput)


def auth_handler(request):
    password = request.POST["password"]
    user = User.objects.get(username=request.POST["username"])
    if not check_password(password, user.password_hash):
        return HttpResponse(status=401)
    token = generate_token(user)
    api_key = settings.API_KEY
    secret = get_secret("jwt")
    return JsonResponse({"token": token, "token_type": "bearer", "expires_in": 3600})


def reset_password(request, token=None):
    new_password = request.POST.get("new_password", "")
    password_confirm = request.POST.get("password_confirm")
    return render(request, "reset.html", {"token": token, "password_min_length": 12})
